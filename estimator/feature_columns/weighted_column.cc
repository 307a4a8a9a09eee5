#include "estimator/feature_columns/weighted_column.h"

#include <utility>

#include "common/error.h"
#include "estimator/feature_columns/column_inputs.h"
#include "estimator/feature_columns/parsing_plan.h"

namespace est::feature_columns {

WeightedCategoricalColumn::WeightedCategoricalColumn(CategoricalColumnPtr categorical, std::string weight_key)
    : categorical_(std::move(categorical)), weight_key_(std::move(weight_key)) {
  EST_CHECK(categorical_ != nullptr, ConfigError, "weighted_categorical_column: the categorical column is null");
  EST_CHECK(!weight_key_.empty(), ConfigError, "weighted_categorical_column \"", categorical_->name(),
            "\": the weight feature key is empty");
}

std::string WeightedCategoricalColumn::name() const { return categorical_->name() + "_weighted_by_" + weight_key_; }

void WeightedCategoricalColumn::plan_parsing(ParsingPlan& plan) const {
  categorical_->plan_parsing(plan);
  plan.add_floats(weight_key_);
}

CategoricalIds WeightedCategoricalColumn::ids(const ColumnInputs& inputs) const {
  auto [weights, lengths] = inputs.floats(weight_key_);
  return WithWeights(categorical_->ids(inputs), weights, lengths, name());
}

std::shared_ptr<const WeightedCategoricalColumn> weighted_categorical_column(CategoricalColumnPtr categorical,
                                                                             std::string weight_key) {
  return std::make_shared<WeightedCategoricalColumn>(std::move(categorical), std::move(weight_key));
}

}  // namespace est::feature_columns
