#include "estimator/feature_columns/hashed_column.h"

#include <utility>

#include "estimator/feature_columns/column_inputs.h"
#include "estimator/feature_columns/parsing_plan.h"

namespace est::feature_columns {

HashedCategoricalColumn::HashedCategoricalColumn(std::string key, int64_t hash_bucket_size, ValueType type)
    : hash_(std::move(key), hash_bucket_size), type_(type) {}

std::string HashedCategoricalColumn::use() const { return "hash_bucket:" + std::to_string(hash_.num_buckets()); }

void HashedCategoricalColumn::plan_parsing(ParsingPlan& plan) const {
  if (type_ == ValueType::kInt64) {
    plan.add_integers(hash_.key());
    return;
  }
  plan.add_strings(hash_.key(), use(), [hash = hash_](std::string_view value) { return hash.id(value); });
}

CategoricalIds HashedCategoricalColumn::ids(const ColumnInputs& inputs) const {
  if (type_ == ValueType::kInt64) return hash_.ids(inputs.integers(hash_.key()));
  return inputs.string_ids(hash_.key(), use());
}

std::shared_ptr<const HashedCategoricalColumn> categorical_column_with_hash_bucket(std::string key,
                                                                                   int64_t hash_bucket_size,
                                                                                   ValueType type) {
  return std::make_shared<HashedCategoricalColumn>(std::move(key), hash_bucket_size, type);
}

}  // namespace est::feature_columns
