#include "estimator/feature_columns/crossed_column.h"

#include <algorithm>
#include <utility>

#include "common/error.h"
#include "estimator/feature_columns/column_inputs.h"
#include "estimator/feature_columns/fingerprint.h"
#include "estimator/feature_columns/hashed_column.h"
#include "estimator/feature_columns/parsing_plan.h"

namespace est::feature_columns {
namespace {

constexpr const char* kFingerprintUse = "fingerprint";

/// `keys` with every crossed column replaced by its own keys (TensorFlow's leaf-level keys).
std::vector<CrossKey> LeafKeys(std::vector<CrossKey> keys) {
  std::vector<CrossKey> leaves;
  for (CrossKey& key : keys) {
    if (key.column == nullptr) {
      EST_CHECK(!key.feature.empty(), ConfigError, "crossed_column: a key is an empty feature name");
      leaves.push_back(std::move(key));
      continue;
    }
    if (const auto* crossed = dynamic_cast<const CrossedColumn*>(key.column.get())) {
      leaves.insert(leaves.end(), crossed->keys().begin(), crossed->keys().end());
      continue;
    }
    EST_CHECK(dynamic_cast<const HashedCategoricalColumn*>(key.column.get()) == nullptr, ConfigError,
              "crossed_column: \"", key.column->name(), "\" is a categorical_column_with_hash_bucket, which ",
              "TensorFlow does not cross (hashing twice adds collisions); give the feature name \"",
              key.column->name(), "\" instead");
    leaves.push_back(std::move(key));
  }
  return leaves;
}

std::string KeyName(const CrossKey& key) { return key.column ? key.column->name() : key.feature; }

}  // namespace

CrossedColumn::CrossedColumn(std::vector<CrossKey> keys, int64_t hash_bucket_size, uint64_t hash_key)
    : leaves_(LeafKeys(std::move(keys))), crosser_(name(), hash_bucket_size, hash_key) {
  EST_CHECK(leaves_.size() >= 2, ConfigError, "crossed_column: ", leaves_.size(), " keys; a cross needs at least 2");
}

std::string CrossedColumn::name() const {
  std::vector<std::string> names;
  for (const CrossKey& key : leaves_) names.push_back(KeyName(key));
  std::sort(names.begin(), names.end());
  std::string joined;
  for (const std::string& name : names) joined += (joined.empty() ? "" : "_X_") + name;
  return joined;
}

void CrossedColumn::plan_parsing(ParsingPlan& plan) const {
  for (const CrossKey& key : leaves_) {
    if (key.column) {
      key.column->plan_parsing(plan);
    } else {
      plan.add_strings(key.feature, kFingerprintUse,
                       [](std::string_view value) { return static_cast<int64_t>(Fingerprint64(value)); });
    }
  }
}

CategoricalIds CrossedColumn::ids(const ColumnInputs& inputs) const {
  std::vector<CrossInput> crossed;
  for (const CrossKey& key : leaves_) {
    crossed.push_back(CrossInput::Ids(key.column ? key.column->ids(inputs)
                                                 : inputs.string_ids(key.feature, kFingerprintUse)));
  }
  return crosser_.ids(crossed);
}

std::shared_ptr<const CrossedColumn> crossed_column(std::vector<CrossKey> keys, int64_t hash_bucket_size,
                                                    uint64_t hash_key) {
  return std::make_shared<CrossedColumn>(std::move(keys), hash_bucket_size, hash_key);
}

}  // namespace est::feature_columns
