#pragma once
// est-train --model canned: a canned estimator of est::canned and its input, both from a spec
// file (canned_spec.h), with no C++ of the user's.

#include <cstdint>
#include <map>
#include <string>

#include "apps/est_train/canned_spec.h"
#include "apps/est_train/models.h"

namespace est_train {

/// The recipe of `spec`'s estimator: ModelRecipe::make_estimator makes it (its model_fn is its
/// own); the input_fn reads the spec's TFRecord or CSV files (sharded by file across input
/// pipelines, parsed by classifier_parse_example_spec or regressor_parse_example_spec of the
/// estimator's columns, a CSV row as data::CsvExamples reads it), training batches of `train_batch_size` (global) shuffled by `shuffle_seed`, and
/// evaluation batches of `eval_batch_size`; metrics are its head's. Exports hold its weights
/// (a canned model_fn crosses and hashes in C++, which no traced program records) and take
/// tf.train.Example records of its columns' features (TensorFlow's
/// build_parsing_serving_input_receiver_fn of make_parse_example_spec); a baseline, which reads no
/// feature, has no serving input.
ModelRecipe CannedModel(const CannedSpec& spec, int64_t train_batch_size, int64_t eval_batch_size,
                        uint64_t shuffle_seed);

/// The asset of a canned export that holds its spec (ExportOptions::assets): the spec file with
/// each vocabulary file an asset beside it and no warm start, so that est-serve builds the model
/// from the export alone.
inline constexpr const char* kCannedSpecAsset = "canned_spec.json";

/// The assets of `spec`'s exports: kCannedSpecAsset, and each categorical_column_with_vocabulary_file's
/// file as "vocabulary-<n>.txt", which the spec there names. ConfigError naming a file it cannot read.
std::map<std::string, std::string> CannedExportAssets(const CannedSpec& spec);

/// What est-serve serves `spec`'s exports with (--model canned --spec): the estimator's model_fn
/// and the serving input CannedModel exports with; nothing else of the recipe is set. No data is
/// read; the estimator is made with `model_dir`, where it writes nothing. ConfigError for a
/// baseline.
ModelRecipe CannedServingModel(const CannedSpec& spec, const std::string& model_dir);

}  // namespace est_train
