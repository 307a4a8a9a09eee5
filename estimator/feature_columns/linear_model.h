#pragma once
/// LinearModel (tf.compat.v1.feature_column.linear_model): a weighted sum of every column plus a
/// bias — the "wide" part of wide & deep and the model of LinearClassifier.

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <string>
#include <vector>

#include "estimator/feature_columns/column_inputs.h"
#include "estimator/feature_columns/embedding_lookup.h"
#include "estimator/feature_columns/feature_column.h"

namespace est::feature_columns {

/// A module with, for each column in the order of names, `linear_model/<column>/weights`: a
/// categorical column's [num_buckets, units] (its ids' rows summed by `sparse_combiner`,
/// weighted for a weighted column), a dense column's [dense_dimension, units]; and
/// `linear_model/bias_weights` [units]. Every variable starts at zero, as TensorFlow's.
/// forward gives float32 [batch, units].
class LinearModelImpl : public torch::nn::Module {
 public:
  /// ConfigError for no columns, a column that is neither categorical nor dense, two columns of
  /// one name, units below 1, or a name with '.'.
  LinearModelImpl(std::vector<FeatureColumnPtr> columns, int64_t units = 1, Combiner sparse_combiner = Combiner::kSum);

  /// The weighted sum.
  at::Tensor forward(const ColumnInputs& inputs);

  /// The columns, sorted by name.
  const std::vector<FeatureColumnPtr>& columns() const { return columns_; }
  /// The weights of a column, by its name.
  at::Tensor weights(const std::string& column) const;
  /// The bias [units].
  const at::Tensor& bias() const { return bias_; }

 private:
  std::vector<FeatureColumnPtr> columns_;
  std::vector<at::Tensor> weights_;
  ColumnVariables variables_;
  at::Tensor bias_;
  Combiner sparse_combiner_;
};
TORCH_MODULE(LinearModel);

}  // namespace est::feature_columns
