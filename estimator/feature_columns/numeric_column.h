#pragma once
/// tf.feature_column.numeric_column: real values of a fixed shape.

#include <torch/arg.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "estimator/feature_columns/feature_column.h"

namespace est::feature_columns {

/// numeric_column's parameters, with TensorFlow's defaults.
struct NumericColumnOptions {
  /// The shape of one example's values.
  TORCH_ARG(std::vector<int64_t>, shape) = {1};
  /// The value of an example without the feature: one number for every element, or one per
  /// element; empty: such an example is a DataError.
  TORCH_ARG(std::vector<double>, default_value);
  /// Applied to the float32 [batch, shape...] values before anything reads them (a bucketized
  /// column too), as TensorFlow's normalizer_fn.
  TORCH_ARG(std::function<at::Tensor(const at::Tensor&)>, normalizer);
};

/// A numeric feature: dense, dense_dimension() = the shape's element count.
class NumericColumn : public DenseColumn {
 public:
  /// The column of feature `key`; ConfigError for an empty key, a shape with a size below 1, or
  /// a default of another element count.
  NumericColumn(std::string key, NumericColumnOptions options);

  std::string name() const override { return key_; }
  void plan_parsing(ParsingPlan& plan) const override;
  int64_t dense_dimension() const override;
  at::Tensor dense_tensor(const ColumnInputs& inputs, const ColumnVariables& variables) const override;

  /// The batch's values, normalized: float32 [batch, shape...].
  at::Tensor values(const ColumnInputs& inputs) const;
  /// The feature's key.
  const std::string& key() const { return key_; }
  /// The parameters.
  const NumericColumnOptions& options() const { return options_; }

 private:
  std::string key_;
  NumericColumnOptions options_;
};

/// tf.feature_column.numeric_column(key, shape, default_value, normalizer_fn).
std::shared_ptr<const NumericColumn> numeric_column(std::string key, NumericColumnOptions options = {});

}  // namespace est::feature_columns
