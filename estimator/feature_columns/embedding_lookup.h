#pragma once
/// TensorFlow's safe_embedding_lookup_sparse: what embedding columns and the linear model's
/// categorical weights compute from a batch of ids.

#include <ATen/core/Tensor.h>

#include <optional>
#include <string>

#include "estimator/feature_columns/categorical_ids.h"

namespace est::feature_columns {

/// How the looked-up rows of one example are combined.
enum class Combiner {
  kSum,    ///< sum of weight × row
  kMean,   ///< sum of weight × row / sum of weights
  kSqrtn,  ///< sum of weight × row / sqrt(sum of squared weights)
};

/// "sum", "mean" or "sqrtn" as a Combiner; ConfigError naming `what` for another name.
Combiner CombinerNamed(const std::string& name, const std::string& what);

/// For each example: its ids' rows of `table` [num_buckets, dimension] (each scaled to an L2 norm
/// of at most `max_norm` when given), weighted by the ids' weights (1 without), combined. Ids
/// below 0 and weights not above 0 are dropped first; an example left without ids gets zeros.
/// float [batch, dimension], differentiable in `table`. DataError naming `column` for an id of
/// num_buckets or more.
at::Tensor SafeEmbeddingLookupSparse(const at::Tensor& table, const CategoricalIds& ids, Combiner combiner,
                                     const std::string& column, std::optional<double> max_norm = std::nullopt);

}  // namespace est::feature_columns
