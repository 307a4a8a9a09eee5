#pragma once
// est-train --model canned: a canned estimator of est::canned and its input, both from a spec
// file (canned_spec.h), with no C++ of the user's.

#include <cstdint>

#include "apps/est_train/canned_spec.h"
#include "apps/est_train/models.h"

namespace est_train {

/// The recipe of `spec`'s estimator: ModelRecipe::make_estimator makes it (its model_fn is its
/// own); the input_fn reads the spec's TFRecord files (sharded by file across input pipelines,
/// parsed by classifier_parse_example_spec or regressor_parse_example_spec of the estimator's
/// columns), training batches of `train_batch_size` (global) shuffled by `shuffle_seed`, and
/// evaluation batches of `eval_batch_size`; metrics are its head's.
ModelRecipe CannedModel(const CannedSpec& spec, int64_t train_batch_size, int64_t eval_batch_size,
                        uint64_t shuffle_seed);

}  // namespace est_train
