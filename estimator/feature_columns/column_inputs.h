#pragma once
/// ColumnInputs: a batch of raw features as the columns read them — the tensors a ParsingPlan's
/// spec parsed and Dataset::padded_batch batched, or tensors of the same layout built in memory.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <utility>

#include "data/element.h"
#include "estimator/feature_columns/categorical_ids.h"
#include "estimator/feature_columns/parsing_plan.h"

namespace est::feature_columns {

/// What each column reads of one batch. Holds references: `features` and `plan` must outlive it.
class ColumnInputs {
 public:
  /// The batch `features` parsed by `plan`'s spec.
  ColumnInputs(const Features& features, const ParsingPlan& plan);

  /// The number of examples: dim 0 of every feature the plan reads (DataError naming two
  /// features that disagree, or when none of them is in the batch).
  int64_t batch_size() const { return batch_size_; }

  /// A numeric feature as float32 [batch, k] (its FixedLen shape flattened; int64 and float64
  /// values converted). DataError naming the feature when it is missing or of another batch.
  at::Tensor numeric(const std::string& key) const;

  /// The values of an integer categorical feature in the padded layout: a VarLen feature (key
  /// and key_length), or a dense int64 [batch] / [batch, k] without its -1s (TensorFlow's
  /// missing-value marker).
  CategoricalIds integers(const std::string& key) const;

  /// The ids that the values of the string feature `key` became under `use` when parsed.
  CategoricalIds string_ids(const std::string& key, const std::string& use) const;

  /// The values of a VarLen float feature (a weighted column's weights): float32
  /// [batch, max_values] and the lengths [batch]; a dense [batch] or [batch, k] has length k.
  std::pair<at::Tensor, at::Tensor> floats(const std::string& key) const;

  /// The plan the features were parsed by.
  const ParsingPlan& plan() const { return plan_; }

 private:
  const at::Tensor& feature(const std::string& key) const;
  const at::Tensor* length(const std::string& key) const;

  const Features& features_;
  const ParsingPlan& plan_;
  int64_t batch_size_ = 0;
};

}  // namespace est::feature_columns
