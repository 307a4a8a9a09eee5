#include "estimator/feature_columns/hash_bucket.h"

#include <utility>

#include "common/error.h"
#include "estimator/feature_columns/fingerprint.h"
#include "estimator/feature_columns/id_mapping.h"

namespace est::feature_columns {

std::string IntegerAsString(int64_t value) { return std::to_string(value); }

int64_t StringToHashBucketFast(std::string_view value, int64_t num_buckets) {
  return static_cast<int64_t>(Fingerprint64(value) % static_cast<uint64_t>(num_buckets));
}

HashBucket::HashBucket(std::string key, int64_t hash_bucket_size)
    : key_(std::move(key)), hash_bucket_size_(hash_bucket_size) {
  EST_CHECK(hash_bucket_size_ >= 1, ConfigError, "categorical_column_with_hash_bucket '", key_,
            "': hash_bucket_size must be at least 1, got ", hash_bucket_size_);
}

int64_t HashBucket::id(std::string_view value) const { return StringToHashBucketFast(value, hash_bucket_size_); }

int64_t HashBucket::id(int64_t value) const { return id(IntegerAsString(value)); }

CategoricalIds HashBucket::ids(const StringRows& rows) const {
  return detail::MapStringRows(rows, [this](const std::string& value) { return id(value); });
}

CategoricalIds HashBucket::ids(const CategoricalIds& values) const {
  CheckLayout(values, key_);
  return detail::MapValues(values, [this](int64_t value) { return id(value); });
}

}  // namespace est::feature_columns
