#pragma once
/// tf.feature_column.indicator_column: a categorical column as a multi-hot vector.

#include <memory>
#include <string>

#include "estimator/feature_columns/feature_column.h"

namespace est::feature_columns {

/// For each example, how often each id occurs (for a weighted column: the sum of its weights):
/// float32 [batch, num_buckets]; ids below 0 count nowhere.
class IndicatorColumn : public DenseColumn {
 public:
  /// ConfigError for a null column.
  explicit IndicatorColumn(CategoricalColumnPtr categorical);

  /// "<categorical>_indicator".
  std::string name() const override { return categorical_->name() + "_indicator"; }
  void plan_parsing(ParsingPlan& plan) const override { categorical_->plan_parsing(plan); }
  int64_t dense_dimension() const override { return categorical_->num_buckets(); }
  at::Tensor dense_tensor(const ColumnInputs& inputs, const ColumnVariables& variables) const override;

 private:
  CategoricalColumnPtr categorical_;
};

/// tf.feature_column.indicator_column(categorical_column).
std::shared_ptr<const IndicatorColumn> indicator_column(CategoricalColumnPtr categorical);

}  // namespace est::feature_columns
