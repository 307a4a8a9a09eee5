// canned_bench: the `canned` group of the performance issue. Trains our canned estimators
// (DNNLinearCombinedClassifier, LinearClassifier, DNNRegressor) on ctr_data.py's click-through
// data with exactly the columns and hyper-parameters of tests/estimator/canned/tensorflow_canned.py
// (TENSORFLOW_CANNED_FACTS.md), so that run_benchmarks.py can set them beside TensorFlow 2.15's:
//
//   canned_bench --data-dir DIR [--estimator wide_deep] [--steps 2000] [--batch-size 256]
//                [--linear-learning-rate 0.1] [--dnn-learning-rate 0.05] [--input tfrecord|tensors]
//                [--eval-every 250] [--threads 1] [--parsing batch|record] [--parse-threads 1]
//                [--input-phases]
//                [--warm-start-from CHECKPOINT] [--barrier-dir DIR]
//
// Training reads DIR/train.tfrecord in file order (no shuffle), repeated, grouped into batches of
// records and parsed a batch at once (TFRecordDataset + parse_batches(ParseExampleBatch) +
// prefetch, as TensorFlow's batch + map(parse_example) + prefetch; --parsing record parses each
// record and padded_batch'es them), or, with --input tensors, the same batches parsed once before
// training and held in memory (the input's own cost taken away); --input-phases first times the
// input's stages alone (framing, parsing into batches), ms a batch. Examples/s is measured from the
// start of the first step to the end of the last (a hook), as tensorflow_canned.py's StepTimer;
// a checkpoint is saved every --eval-every steps, and after training each is evaluated on all of
// DIR/eval.tfrecord: the curve of (step, seconds of steps so far, AUC or average loss) gives the
// time to a target. Prints a table, then one JSON line per run:
//   {"bench": "canned", "figure": "train", "estimator": ..., "input": ..., "steps": ...,
//    "examples_per_second": ..., "step_seconds": ..., "train_seconds": ..., "metrics": {...},
//    "curve": [[step, seconds, auc or average_loss], ...]}
//
// In a TF_CONFIG cluster with a ps job (as canned_tf_peer.py runs TensorFlow's), each process is
// one task of asynchronous parameter-server training (ParameterServerStrategy): a ps task serves
// the variables; the chief and the workers meet in --barrier-dir (a file each) before their first
// step, train until the global step reaches --steps, and print
//   {"bench": "canned", "figure": "cluster_task", "task": "worker 0", "steps": local steps,
//    "first": ..., "last": ...}
// where first and last are CLOCK_MONOTONIC seconds (the start of the first step, the end of the
// last), so that the examples/s of all the tasks together can be measured across processes.

#include <unistd.h>

#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "common/error.h"
#include "data/tfrecord_dataset.h"
#include "distribute/parameter_server_strategy.h"
#include "estimator/train_and_evaluate.h"
#include "estimator/canned/canned_estimators.h"
#include "estimator/feature_columns/feature_columns.h"
#include "estimator/process_tuning.h"

namespace {

namespace fc = est::feature_columns;
using Clock = std::chrono::steady_clock;

/// The (linear, dnn) columns of tensorflow_canned.feature_columns at its full sizes.
struct CtrColumns {
  std::vector<fc::FeatureColumnPtr> linear;
  std::vector<fc::DenseColumnPtr> dnn;
};

/// ctr_data.CATEGORIES.
std::vector<std::string> Categories() {
  return {"apparel", "automotive", "baby",      "beauty",      "books",   "cameras", "charity", "dating",
          "education", "electronics", "finance", "food",      "furniture", "games", "garden",  "health",
          "home",    "insurance",  "jewelry", "movies",      "music",   "news",    "pets",    "real_estate",
          "shoes",   "software",   "sports",  "telecom",     "toys",    "travel"};
}

/// ctr_data.TAGS: tag00 .. tag49.
std::vector<std::string> Tags() {
  std::vector<std::string> tags;
  for (int i = 0; i < 50; ++i) tags.push_back((i < 10 ? "tag0" : "tag") + std::to_string(i));
  return tags;
}

/// tensorflow_canned.feature_columns(**FULL_SIZES): user 10000 hash buckets, cross 1000, user
/// embedding 8, tags embedding 4 (mean); the DNN's age and price normalized in float32.
CtrColumns TensorFlowCannedColumns() {
  const auto user = fc::categorical_column_with_hash_bucket("user", 10000);
  const auto category = fc::categorical_column_with_vocabulary_list("category", Categories(),
                                                                   fc::VocabularyOptions().num_oov_buckets(2));
  const auto device =
      fc::categorical_column_with_vocabulary_list("device", std::vector<std::string>{"mobile", "desktop", "tablet"});
  const auto hour = fc::categorical_column_with_identity("hour", 24);
  const auto tags = fc::categorical_column_with_vocabulary_list("tags", Tags());
  const auto age_buckets =
      fc::bucketized_column(fc::numeric_column("age"), {18, 25, 30, 35, 40, 45, 50, 55, 60, 65});
  const auto normalized = [](float mean, float scale) {
    return fc::NumericColumnOptions().normalizer(
        [mean, scale](const at::Tensor& x) { return x.sub(mean).div(scale); });
  };
  CtrColumns columns;
  columns.linear = {user, category, device, fc::crossed_column({"category", "device"}, 1000), hour,
                    age_buckets, fc::numeric_column("price"), tags};
  columns.dnn = {fc::embedding_column(user, 8), fc::indicator_column(category), fc::indicator_column(device),
                 fc::indicator_column(hour), fc::numeric_column("age", normalized(40.0F, 15.0F)),
                 fc::numeric_column("price", normalized(3.0F, 2.0F)),
                 fc::embedding_column(tags, 4, fc::EmbeddingColumnOptions().combiner(fc::Combiner::kMean))};
  return columns;
}

/// What the command line chose.
struct Flags {
  std::string data_dir;
  std::string estimator = "wide_deep";
  int64_t steps = 2000;
  int64_t batch_size = 256;
  double linear_learning_rate = 0.1;  ///< 0: TensorFlow's default optimizer
  double dnn_learning_rate = 0.05;    ///< 0: TensorFlow's default optimizer
  std::string input = "tfrecord";
  int64_t eval_every = 250;
  int threads = 1;
  std::string model_dir;
  int64_t seed = 73;
  std::string parsing = "batch";  ///< batch (ParseExampleBatch) or record (ParseExample + padded_batch)
  int64_t parse_threads = 1;  ///< above 1: records parsed by a parallel map of this many threads
  bool input_phases = false;  ///< also time the input's stages alone
  std::string warm_start_from;  ///< a checkpoint whose variables start training (TensorFlow's)
  std::string barrier_dir;  ///< in a TF_CONFIG cluster: where the training tasks meet before their first step
};

/// Times the training steps from the start of the first to the end of the last, and the end of
/// every step whose global step is a multiple of `every` (when its checkpoint is saved).
class StepTimer : public est::SessionRunHook {
 public:
  explicit StepTimer(int64_t every) : every_(every) {}

  est::RunArgs before_run(est::RunContext&) override {
    if (steps_ == 0) first_ = Clock::now();
    return {};
  }

  void after_run(est::RunContext& context, const est::RunValues&) override {
    last_ = Clock::now();
    ++steps_;
    const int64_t step = context.session().global_step();
    if (every_ > 0 && step % every_ == 0) marks_.emplace_back(step, seconds());
  }

  /// Seconds from the start of the first step to the end of the last.
  double seconds() const { return std::chrono::duration<double>(last_ - first_).count(); }
  /// The start of the first step and the end of the last.
  Clock::time_point first() const { return first_; }
  Clock::time_point last() const { return last_; }
  /// Steps timed.
  int64_t steps() const { return steps_; }
  /// (global step, seconds of steps until its end) at each multiple of `every`.
  const std::vector<std::pair<int64_t, double>>& marks() const { return marks_; }

 private:
  int64_t every_;
  int64_t steps_ = 0;
  Clock::time_point first_;
  Clock::time_point last_;
  std::vector<std::pair<int64_t, double>> marks_;
};

/// Holds the first step until every training task of the cluster has reached it: each task
/// writes a file into `dir` and waits for as many as there are training tasks (at most 10 minutes),
/// so that the tasks' steps overlap from the first.
class StartBarrier : public est::SessionRunHook {
 public:
  StartBarrier(std::string dir, std::string task, int tasks) : dir_(std::move(dir)), task_(std::move(task)), tasks_(tasks) {}

  est::RunArgs before_run(est::RunContext&) override {
    if (passed_) return {};
    std::filesystem::create_directories(dir_);
    std::ofstream((std::filesystem::path(dir_) / ("ready-" + task_)).string()).put('\n');
    const Clock::time_point deadline = Clock::now() + std::chrono::minutes(10);
    while (std::distance(std::filesystem::directory_iterator(dir_), std::filesystem::directory_iterator()) < tasks_) {
      EST_CHECK(Clock::now() < deadline, est::Error, "canned_bench: ", task_, " waited 10 minutes in '", dir_,
                "' for ", tasks_, " training tasks");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    passed_ = true;
    return {};
  }

 private:
  std::string dir_;
  std::string task_;
  int tasks_;
  bool passed_ = false;
};

/// Seconds of CLOCK_MONOTONIC (steady_clock on Linux), comparable across processes.
double MonotonicSeconds(Clock::time_point time) {
  return std::chrono::duration<double>(time.time_since_epoch()).count();
}

/// The estimator `name` with the columns and rates of tensorflow_canned.py.
std::unique_ptr<est::Estimator> MakeEstimator(const Flags& flags, const est::RunConfig& config) {
  const est::WarmStartSettings warm_start(flags.warm_start_from);
  const CtrColumns columns = TensorFlowCannedColumns();
  const auto ftrl = flags.linear_learning_rate > 0 ? est::canned::OptimizerSpec("Ftrl", flags.linear_learning_rate)
                                                   : est::canned::OptimizerSpec("Ftrl");
  const auto adagrad = flags.dnn_learning_rate > 0 ? est::canned::OptimizerSpec("Adagrad", flags.dnn_learning_rate)
                                                   : est::canned::OptimizerSpec("Adagrad");
  if (flags.estimator == "wide_deep") {
    auto options = est::canned::DNNLinearCombinedOptions()
                       .linear_feature_columns(columns.linear)
                       .dnn_feature_columns(columns.dnn)
                       .dnn_hidden_units({64, 32});
    // TensorFlow's default linear rate depends on the number of columns: only set what was asked.
    if (flags.linear_learning_rate > 0) options.linear_optimizer(ftrl);
    if (flags.dnn_learning_rate > 0) options.dnn_optimizer(adagrad);
    return std::make_unique<est::canned::DNNLinearCombinedClassifier>(options, flags.model_dir, config, warm_start);
  }
  if (flags.estimator == "linear") {
    return std::make_unique<est::canned::LinearClassifier>(
        est::canned::LinearOptions().feature_columns(columns.linear).optimizer(ftrl), flags.model_dir, config,
        warm_start);
  }
  EST_CHECK(flags.estimator == "dnn_regressor", est::ConfigError, "canned_bench: unknown --estimator '",
            flags.estimator, "' (wide_deep, linear or dnn_regressor)");
  return std::make_unique<est::canned::DNNRegressor>(
      est::canned::DNNOptions().feature_columns(columns.dnn).hidden_units({64, 32}).optimizer(adagrad),
      flags.model_dir, config, warm_start);
}

/// The columns an estimator reads, and its label.
std::pair<std::vector<fc::FeatureColumnPtr>, std::string> ColumnsAndLabel(const std::string& estimator) {
  const CtrColumns columns = TensorFlowCannedColumns();
  std::vector<fc::FeatureColumnPtr> all;
  if (estimator != "dnn_regressor") all = columns.linear;
  if (estimator != "linear") all.insert(all.end(), columns.dnn.begin(), columns.dnn.end());
  return {all, estimator == "dnn_regressor" ? "spend" : "clicked"};
}

/// The parsing spec of the estimator's features and label, and the label's name.
std::pair<est::data::ExampleSpec, std::string> SpecAndLabel(const std::string& estimator) {
  const auto [columns, label] = ColumnsAndLabel(estimator);
  return {label == "spend" ? est::canned::regressor_parse_example_spec(columns, label)
                           : est::canned::classifier_parse_example_spec(columns, label),
          label};
}

/// Parsed, padded batches of `file`, read in file order, repeated when `repeat`: with --parsing
/// batch, records grouped and parsed a batch at once (parse_batches + ParseExampleBatch, by
/// `parse_threads` threads); with --parsing record, each record parsed (ParseExample, by the
/// reader or a parallel map) and then padded_batch'ed.
est::data::Dataset Batches(const Flags& flags, const std::string& file, bool repeat, int64_t parse_threads = 1) {
  const auto [spec, label] = SpecAndLabel(flags.estimator);
  if (flags.parsing == "batch") {
    est::data::Dataset records = est::data::TFRecordDataset({file});
    if (repeat) records = records.repeat();
    return records.parse_batches(flags.batch_size, est::data::ParseExampleBatch(spec, label),
                                 est::data::ParseBatchesOptions().num_parallel_calls(parse_threads));
  }
  EST_CHECK(flags.parsing == "record", est::ConfigError, "canned_bench: unknown --parsing '", flags.parsing,
            "' (batch or record)");
  const est::data::RecordParser parse = est::data::ParseExample(spec, label);
  est::data::Dataset records =
      parse_threads > 1 ? est::data::TFRecordDataset({file})
                        : est::data::TFRecordDataset({file}, est::data::TFRecordDatasetOptions().parser(parse));
  if (repeat) records = records.repeat();
  if (parse_threads > 1) {
    records = records.map(
        [parse](est::data::Element element) {
          const at::Tensor bytes = element.features.at("record");
          const auto* data = static_cast<const char*>(bytes.data_ptr());
          return parse(std::string_view(data, static_cast<size_t>(bytes.numel())));
        },
        parse_threads);
  }
  return records.padded_batch(flags.batch_size);
}

/// Seconds per batch of the TFRecord input alone on this thread, over the first `batches`
/// batches of the training file: framing (records as bytes), and parsing into batches.
nlohmann::json InputPhases(const Flags& flags, const std::string& file, int64_t batches) {
  const int64_t records = batches * flags.batch_size;
  const auto time = [](const est::data::Dataset& dataset) {
    const Clock::time_point start = Clock::now();
    auto iterator = dataset.make_iterator();
    while (iterator->next()) {
    }
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  const double framing = time(est::data::TFRecordDataset({file}).repeat().take(records));
  const double total = time(Batches(flags, file, true).take(batches));
  const auto ms = [batches](double seconds) { return seconds / static_cast<double>(batches) * 1e3; };
  return {{"framing_ms_per_batch", ms(framing)},
          {"parsing_ms_per_batch", ms(total - framing)},
          {"total_ms_per_batch", ms(total)}};
}

/// One training run's figures.
struct RunResult {
  double step_seconds = 0;
  double train_seconds = 0;
  double prepare_seconds = 0;  ///< --input tensors: parsing every batch before training
  nlohmann::json input_phases;  ///< --input-phases: InputPhases
  int64_t steps = 0;
  nlohmann::json metrics;
  nlohmann::json curve = nlohmann::json::array();
};

RunResult Run(const Flags& flags) {
  const std::string train_file = (std::filesystem::path(flags.data_dir) / "train.tfrecord").string();
  const std::string eval_file = (std::filesystem::path(flags.data_dir) / "eval.tfrecord").string();
  for (const std::string& file : {train_file, eval_file}) {
    EST_CHECK(std::filesystem::exists(file), est::IoError, "canned_bench: no '", file,
              "' (make it with tests/estimator/canned/ctr_data.py)");
  }
  RunResult result;
  if (flags.input_phases) result.input_phases = InputPhases(flags, train_file, std::min<int64_t>(flags.steps, 400));
  est::data::Dataset train = Batches(flags, train_file, true, flags.parse_threads).take(flags.steps);
  if (flags.input == "tensors") {
    // The same batches, parsed and padded once into memory: the cache is filled by this pass.
    train = train.cache();
    const Clock::time_point start = Clock::now();
    auto iterator = train.make_iterator();
    while (iterator->next()) {
    }
    result.prepare_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  } else {
    EST_CHECK(flags.input == "tfrecord", est::ConfigError, "canned_bench: unknown --input '", flags.input,
              "' (tfrecord or tensors)");
    train = train.prefetch(2);
  }

  est::RunConfig config;
  config.tf_random_seed = static_cast<uint64_t>(flags.seed);
  config.save_checkpoints_steps = flags.eval_every > 0 ? flags.eval_every : flags.steps;
  config.keep_checkpoint_max = 0;
  std::unique_ptr<est::Estimator> estimator = MakeEstimator(flags, config);
  auto timer = std::make_shared<StepTimer>(flags.eval_every);
  const Clock::time_point begin = Clock::now();
  estimator->train([&] { return train; }, est::TrainOptions().max_steps(flags.steps).hooks({timer}));
  result.train_seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  result.step_seconds = timer->seconds();
  result.steps = timer->steps();

  const bool classifier = flags.estimator != "dnn_regressor";
  const auto eval_input = [&] { return Batches(flags, eval_file, false); };
  for (const auto& [step, seconds] : timer->marks()) {
    if (step == flags.steps) continue;  // the final checkpoint's evaluation follows
    const std::string checkpoint =
        (std::filesystem::path(estimator->model_dir()) / ("model.ckpt-" + std::to_string(step))).string();
    const est::EvalResult eval = estimator->evaluate(eval_input, est::EvalOptions().checkpoint_path(checkpoint));
    result.curve.push_back({step, seconds, eval.at(classifier ? "auc" : "average_loss")});
  }
  const est::EvalResult eval = estimator->evaluate(eval_input);
  for (const char* key : {"accuracy", "auc", "auc_precision_recall", "average_loss", "loss", "label/mean",
                          "prediction/mean"}) {
    if (classifier || std::string(key) == "average_loss" || std::string(key) == "loss" ||
        std::string(key) == "label/mean" || std::string(key) == "prediction/mean") {
      result.metrics[key] = eval.at(key);
    }
  }
  result.curve.push_back({flags.steps, result.step_seconds, eval.at(classifier ? "auc" : "average_loss")});
  return result;
}

/// One task of a TF_CONFIG cluster (`config`'s), training asynchronously on parameter servers:
/// the JSON line of a training task, none for a ps task.
std::optional<nlohmann::json> RunClusterTask(const Flags& flags, est::RunConfig config) {
  const est::distribute::ClusterConfig& cluster = config.cluster;
  EST_CHECK(cluster.cluster.count("ps") != 0, est::ConfigError,
            "canned_bench: the cluster of TF_CONFIG has no ps job; it trains on parameter servers");
  EST_CHECK(!flags.barrier_dir.empty(), est::ConfigError, "canned_bench: a cluster task needs --barrier-dir");
  config.train_distribute = est::distribute::ParameterServerStrategy::Create();
  config.save_checkpoints_steps = flags.steps;
  std::unique_ptr<est::Estimator> estimator = MakeEstimator(flags, config);
  const std::string train_file = (std::filesystem::path(flags.data_dir) / "train.tfrecord").string();
  const auto input_fn = [&] { return Batches(flags, train_file, true, flags.parse_threads).prefetch(2); };
  if (cluster.is_ps()) {
    est::train_and_evaluate(*estimator, est::TrainSpec(input_fn).max_steps(flags.steps), est::EvalSpec(input_fn));
    return std::nullopt;
  }
  const std::string task = cluster.job() + " " + std::to_string(cluster.task_id);
  auto barrier = std::make_shared<StartBarrier>(flags.barrier_dir, cluster.job() + "-" + std::to_string(cluster.task_id),
                                                cluster.num_worker_replicas);
  auto timer = std::make_shared<StepTimer>(0);
  estimator->train(input_fn, est::TrainOptions().max_steps(flags.steps).hooks({barrier, timer}));
  return nlohmann::json{{"bench", "canned"},        {"figure", "cluster_task"},
                        {"estimator", flags.estimator}, {"task", task},
                        {"steps", timer->steps()},     {"batch_size", flags.batch_size},
                        {"first", MonotonicSeconds(timer->first())},
                        {"last", MonotonicSeconds(timer->last())}};
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"Trains our canned estimators on ctr_data.py's click-through data as tensorflow_canned.py trains "
               "TensorFlow's, and prints examples/s and the eval metrics"};
  app.add_option("--data-dir", flags.data_dir, "directory of ctr_data.py's train.tfrecord and eval.tfrecord")
      ->required();
  app.add_option("--estimator", flags.estimator, "wide_deep, linear or dnn_regressor")->capture_default_str();
  app.add_option("--steps", flags.steps, "training steps")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--batch-size", flags.batch_size)->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--linear-learning-rate", flags.linear_learning_rate,
                 "Ftrl's learning rate; 0: TensorFlow's default optimizer")
      ->capture_default_str();
  app.add_option("--dnn-learning-rate", flags.dnn_learning_rate,
                 "Adagrad's learning rate; 0: TensorFlow's default optimizer")
      ->capture_default_str();
  app.add_option("--input", flags.input, "tfrecord (parsed while training) or tensors (parsed before)")
      ->capture_default_str();
  app.add_option("--eval-every", flags.eval_every, "checkpoint and evaluate every this many steps (0: at the end)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--threads", flags.threads, "LibTorch's intra-op threads")->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--model-dir", flags.model_dir, "an empty directory; a temporary one when absent");
  app.add_option("--seed", flags.seed, "RunConfig::tf_random_seed")->capture_default_str();
  app.add_option("--parsing", flags.parsing,
                 "batch (records grouped, then parsed a batch at once) or record (each parsed, then padded_batch)")
      ->check(CLI::IsMember({"batch", "record"}));
  app.add_option("--parse-threads", flags.parse_threads,
                 "--input tfrecord: above 1, records are parsed by a parallel map of this many threads")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--warm-start-from", flags.warm_start_from,
                 "a checkpoint (TensorFlow's initial one, model.ckpt-0) whose variables training starts from instead "
                 "of random values, to compare training step for step");
  app.add_option("--barrier-dir", flags.barrier_dir,
                 "in a TF_CONFIG cluster: the directory where the training tasks meet before their first step");
  app.add_flag("--input-phases", flags.input_phases,
               "first time the input's stages alone (framing, parse, padded_batch), ms a batch");
  CLI11_PARSE(app, argc, argv);
  try {
    est::TuneProcessForTraining();  // as est-train does: malloc thresholds, the caching CPU allocator
    at::set_num_threads(flags.threads);
    est::RunConfig cluster_config;
    if (!cluster_config.cluster.is_local()) {
      EST_CHECK(!flags.model_dir.empty(), est::ConfigError, "canned_bench: a cluster task needs --model-dir");
      cluster_config.tf_random_seed = static_cast<uint64_t>(flags.seed);
      if (auto line = RunClusterTask(flags, cluster_config)) std::cout << line->dump() << std::endl;
      return 0;
    }
    const bool temporary = flags.model_dir.empty();
    if (temporary) {
      flags.model_dir = (std::filesystem::temp_directory_path() /
                         ("canned_bench_" + flags.estimator + "_" + std::to_string(::getpid())))
                            .string();
      std::filesystem::remove_all(flags.model_dir);
    }
    const RunResult result = Run(flags);
    if (temporary) std::filesystem::remove_all(flags.model_dir);
    const double examples_per_second =
        static_cast<double>(result.steps * flags.batch_size) / std::max(result.step_seconds, 1e-9);
    const bool classifier = flags.estimator != "dnn_regressor";
    std::printf("canned_bench: %s, input %s, %lld steps of %lld, %d thread(s)\n", flags.estimator.c_str(),
                flags.input.c_str(), static_cast<long long>(result.steps), static_cast<long long>(flags.batch_size),
                flags.threads);
    const std::string prepared =
        flags.input == "tensors" ? ", parsed before in " + std::to_string(result.prepare_seconds) + " s" : "";
    std::printf("  examples/s %.0f  (steps %.3f s, train() %.3f s%s)\n", examples_per_second, result.step_seconds,
                result.train_seconds, prepared.c_str());
    if (flags.input_phases) std::printf("  input stages alone, ms a batch: %s\n", result.input_phases.dump().c_str());
    for (const auto& point : result.curve) {
      std::printf("  step %6lld  %7.3f s  %s %.4f\n", static_cast<long long>(point[0].get<int64_t>()),
                  point[1].get<double>(), classifier ? "auc" : "average_loss", point[2].get<double>());
    }
    const nlohmann::json line = {{"bench", "canned"},
                                 {"figure", "train"},
                                 {"estimator", flags.estimator},
                                 {"input", flags.input},
                                 {"steps", result.steps},
                                 {"batch_size", flags.batch_size},
                                 {"threads", flags.threads},
                                 {"examples_per_second", examples_per_second},
                                 {"step_seconds", result.step_seconds},
                                 {"train_seconds", result.train_seconds},
                                 {"prepare_seconds", result.prepare_seconds},
                                 {"parsing", flags.parsing},
                                 {"parse_threads", flags.parse_threads},
                                 {"input_phases", result.input_phases},
                                 {"metrics", result.metrics},
                                 {"curve", result.curve}};
    std::cout << line.dump() << std::endl;
    return 0;
  } catch (const std::exception& error) {
    std::cerr << "canned_bench: " << error.what() << "\n";
    return 1;
  }
}
