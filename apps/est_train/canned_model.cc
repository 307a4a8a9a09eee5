#include "apps/est_train/canned_model.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>

#include "apps/est_train/spec_value.h"
#include "common/error.h"
#include "common/file_util.h"
#include "data/csv_examples.h"
#include "data/dataset.h"
#include "data/example.h"
#include "data/tfrecord_dataset.h"
#include "estimator/export/parsing_serving_input.h"
#include "estimator/canned/regression_head.h"

namespace est_train {
namespace {

// The records of one input: TFRecord files' records as bytes, or CSV rows parsed by the
// estimator's columns (data::CsvExamples). Files are interleaved by threads in training, read one
// after another in evaluation; sharded by file across input pipelines where there are files
// enough.
est::data::Dataset CannedRecords(const SpecInput& input, const SpecEstimator& estimator, bool training,
                                 const est::distribute::InputContext& context) {
  const auto options = est::data::TFRecordDatasetOptions().reader(
      est::data::TFRecordReaderOptions().compression(input.compression));
  auto read = [input, options, spec = estimator.example_spec, label = estimator.label](std::vector<std::string> files) {
    return input.csv ? est::data::CsvExamples(std::move(files), spec, label, input.csv_options)
                     : est::data::TFRecordDataset(std::move(files), options);
  };
  if (!training) return read(input.files).auto_shard(context.num_input_pipelines(), context.input_pipeline_id());
  auto records = [read](const std::string& file) { return read({file}); };
  const int64_t cycle_length = std::min<int64_t>(4, static_cast<int64_t>(input.files.size()));
  return est::data::Dataset::InterleaveFiles(input.files, records,
                                             est::data::InterleaveOptions()
                                                 .cycle_length(std::max<int64_t>(cycle_length, 1))
                                                 .num_parallel_calls(est::data::kAutotune))
      .auto_shard(context.num_input_pipelines(), context.input_pipeline_id());
}

// Batches of `batch_size` of CannedRecords' records: TFRecord records parsed a batch at once
// (ParseExampleBatch, by threads beside the step's), CSV rows padded_batch'ed.
est::data::Dataset CannedBatches(est::data::Dataset records, const SpecInput& input, const SpecEstimator& estimator,
                                 int64_t batch_size) {
  if (input.csv) return records.padded_batch(batch_size);
  return records.parse_batches(batch_size, est::data::ParseExampleBatch(estimator.example_spec, estimator.label),
                               est::data::ParseBatchesOptions().num_parallel_calls(est::data::kAutotune));
}

// The keys the head's evaluation reports, from its metrics of a batch of one example.
std::vector<std::string> HeadMetricNames(const est::canned::Head& head) {
  est::Features features;
  if (!head.options().weight_column().empty()) features[head.options().weight_column()] = at::ones({1, 1});
  const at::Tensor logits = at::zeros({1, head.logits_dimension()});
  const bool regression = head.logits_dimension() > 0 && dynamic_cast<const est::canned::RegressionHead*>(&head);
  const at::Tensor labels = regression ? at::zeros({1, head.logits_dimension()}) : at::zeros({1, 1}, at::kLong);
  std::vector<std::string> names;
  for (const auto& [name, metric] : head.metrics(labels, logits, features)) names.push_back(name);
  return names;
}

}  // namespace

ModelRecipe CannedModel(const CannedSpec& spec, int64_t train_batch_size, int64_t eval_batch_size,
                        uint64_t shuffle_seed) {
  const SpecInput train = spec.train;
  const SpecInput eval = spec.eval;
  const SpecEstimator estimator = spec.estimator;
  auto input_fn = [=](est::Mode mode, const est::distribute::InputContext& context) {
    const bool training = mode == est::Mode::kTrain;
    const SpecInput& input = training ? train : eval;
    auto records = CannedRecords(input, estimator, training, context);
    // A stream repeats before it is shuffled: a shuffle over an endless input restores a
    // position by replaying its draws (data/dataset.h).
    if (training) records = records.repeat().shuffle(train.shuffle_buffer, shuffle_seed);
    const int64_t batch_size = training ? train_batch_size : eval_batch_size;
    return CannedBatches(records, input, estimator, context.per_replica_batch_size(batch_size)).prefetch(2);
  };
  ModelRecipe recipe;
  recipe.input_fn = input_fn;
  recipe.make_estimator = spec.estimator.make;
  recipe.metrics = HeadMetricNames(*spec.estimator.head);
  // A baseline reads no feature: requests of no tensor would say nothing of their size.
  if (!spec.estimator.feature_spec.empty())
    recipe.serving_input = est::ParsingServingInputFn(spec.estimator.feature_spec);
  recipe.export_weights_only = true;
  recipe.class_labels = spec.estimator.class_labels;
  recipe.export_assets = CannedExportAssets(spec);
  return recipe;
}

std::map<std::string, std::string> CannedExportAssets(const CannedSpec& spec) {
  nlohmann::json json = SpecValue::ReadFile(spec.file).json();
  std::map<std::string, std::string> assets;
  json.erase("warm_start_from");  // training's start, which serving does not read
  const std::filesystem::path base_dir = std::filesystem::path(spec.file).parent_path();
  if (json.contains("columns")) {
    for (auto& [name, column] : json.at("columns").items()) {
      if (!column.contains("categorical_column_with_vocabulary_file")) continue;
      nlohmann::json& file = column.at("categorical_column_with_vocabulary_file").at("vocabulary_file");
      std::filesystem::path path = file.get<std::string>();
      if (path.is_relative()) path = base_dir / path;
      const std::string asset = "vocabulary-" + std::to_string(assets.size()) + ".txt";
      assets.emplace(asset, est::ReadFile(path.string()));
      file = asset;
    }
  }
  assets.emplace(kCannedSpecAsset, json.dump(2) + "\n");
  return assets;
}

ModelRecipe CannedServingModel(const CannedSpec& spec, const std::string& model_dir) {
  EST_CHECK(!spec.estimator.feature_spec.empty(), est::ConfigError, spec.estimator.name, " (", spec.file,
            ") reads no feature, so it has no export to serve");
  ModelRecipe recipe;
  recipe.model_fn = spec.estimator.make(model_dir, est::RunConfig())->model_fn();
  recipe.serving_input = est::ParsingServingInputFn(spec.estimator.feature_spec);
  return recipe;
}

}  // namespace est_train
