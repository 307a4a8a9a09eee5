#include "estimator/feature_columns/identity.h"

#include <utility>

#include "common/error.h"
#include "estimator/feature_columns/id_mapping.h"

namespace est::feature_columns {

Identity::Identity(std::string key, int64_t num_buckets, std::optional<int64_t> default_value)
    : key_(std::move(key)), num_buckets_(num_buckets), default_value_(default_value) {
  EST_CHECK(num_buckets_ >= 1, ConfigError, "categorical_column_with_identity '", key_,
            "': num_buckets must be at least 1, got ", num_buckets_);
  EST_CHECK(!default_value_ || (*default_value_ >= 0 && *default_value_ < num_buckets_), ConfigError,
            "categorical_column_with_identity '", key_, "': default_value ", *default_value_,
            " is not in [0, ", num_buckets_, ")");
}

int64_t Identity::id(int64_t value) const {
  if (value >= 0 && value < num_buckets_) return value;
  EST_CHECK(default_value_.has_value(), DataError, "categorical_column_with_identity '", key_, "': value ", value,
            " is not in [0, ", num_buckets_, ") and the column has no default_value");
  return *default_value_;
}

CategoricalIds Identity::ids(const CategoricalIds& values) const {
  CheckLayout(values, key_);
  return detail::MapValues(values, [this](int64_t value) { return id(value); });
}

}  // namespace est::feature_columns
