#pragma once
/// tf.feature_column.weighted_categorical_column: a categorical column whose ids carry the
/// weights of a float feature, value by value.

#include <memory>
#include <string>

#include "estimator/feature_columns/feature_column.h"

namespace est::feature_columns {

/// The ids of `categorical` with the weights of feature `weight_key` (as many per example as
/// ids; DataError naming the column otherwise).
class WeightedCategoricalColumn : public CategoricalColumn {
 public:
  /// ConfigError for a null column or an empty key.
  WeightedCategoricalColumn(CategoricalColumnPtr categorical, std::string weight_key);

  /// "<categorical>_weighted_by_<weight_key>".
  std::string name() const override;
  void plan_parsing(ParsingPlan& plan) const override;
  int64_t num_buckets() const override { return categorical_->num_buckets(); }
  CategoricalIds ids(const ColumnInputs& inputs) const override;

 private:
  CategoricalColumnPtr categorical_;
  std::string weight_key_;
};

/// tf.feature_column.weighted_categorical_column(categorical_column, weight_feature_key).
std::shared_ptr<const WeightedCategoricalColumn> weighted_categorical_column(CategoricalColumnPtr categorical,
                                                                             std::string weight_key);

}  // namespace est::feature_columns
