#include "estimator/feature_columns/identity_column.h"

#include <utility>

#include "estimator/feature_columns/column_inputs.h"
#include "estimator/feature_columns/parsing_plan.h"

namespace est::feature_columns {

IdentityCategoricalColumn::IdentityCategoricalColumn(std::string key, int64_t num_buckets,
                                                     std::optional<int64_t> default_value)
    : identity_(std::move(key), num_buckets, default_value) {}

void IdentityCategoricalColumn::plan_parsing(ParsingPlan& plan) const { plan.add_integers(identity_.key()); }

CategoricalIds IdentityCategoricalColumn::ids(const ColumnInputs& inputs) const {
  return identity_.ids(inputs.integers(identity_.key()));
}

std::shared_ptr<const IdentityCategoricalColumn> categorical_column_with_identity(
    std::string key, int64_t num_buckets, std::optional<int64_t> default_value) {
  return std::make_shared<IdentityCategoricalColumn>(std::move(key), num_buckets, default_value);
}

}  // namespace est::feature_columns
