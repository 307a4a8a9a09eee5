#pragma once
/// The ids of tf.feature_column.categorical_column_with_hash_bucket:
/// Fingerprint64(value) % hash_bucket_size (TensorFlow's string_to_hash_bucket_fast), an
/// integer value hashed as its decimal text (TensorFlow's as_string).

#include <cstdint>
#include <string>
#include <string_view>

#include "estimator/feature_columns/categorical_ids.h"

namespace est::feature_columns {

/// An integer as TensorFlow's as_string writes it: decimal, '-' for negatives, no padding.
std::string IntegerAsString(int64_t value);

/// TensorFlow's string_to_hash_bucket_fast for one value: Fingerprint64(value) %
/// num_buckets, taken on the unsigned fingerprint. `num_buckets` must be positive.
int64_t StringToHashBucketFast(std::string_view value, int64_t num_buckets);

/// The hashing of one categorical_column_with_hash_bucket.
class HashBucket {
 public:
  /// The column `key` with `hash_bucket_size` buckets; ConfigError naming the column when
  /// the size is below 1, as TensorFlow refuses it.
  HashBucket(std::string key, int64_t hash_bucket_size);

  /// The id of a string value.
  int64_t id(std::string_view value) const;
  /// The id of an integer value: that of its decimal text.
  int64_t id(int64_t value) const;

  /// The ids of a batch of string rows.
  CategoricalIds ids(const StringRows& rows) const;
  /// The ids of a batch of integer values in the padded layout.
  CategoricalIds ids(const CategoricalIds& values) const;

  /// The column's name (its feature's key).
  const std::string& key() const { return key_; }
  /// The number of ids: hash_bucket_size.
  int64_t num_buckets() const { return hash_bucket_size_; }

 private:
  std::string key_;
  int64_t hash_bucket_size_;
};

}  // namespace est::feature_columns
