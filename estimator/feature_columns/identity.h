#pragma once
/// The ids of tf.feature_column.categorical_column_with_identity: the integer value itself,
/// which must lie in [0, num_buckets); a value outside gets default_value when the column
/// has one.

#include <cstdint>
#include <optional>
#include <string>

#include "estimator/feature_columns/categorical_ids.h"

namespace est::feature_columns {

/// The identity mapping of one categorical_column_with_identity.
class Identity {
 public:
  /// The column `key` with ids in [0, num_buckets). ConfigError naming the column when
  /// num_buckets < 1 or a default_value lies outside that range, as TensorFlow refuses them.
  Identity(std::string key, int64_t num_buckets, std::optional<int64_t> default_value = std::nullopt);

  /// The id of `value`: itself when in range, else the default value. Without one an
  /// out-of-range value is a DataError naming the column, the value and the range (where
  /// TensorFlow passes it on and the embedding or linear lookup fails on it).
  int64_t id(int64_t value) const;

  /// The ids of a batch of integer values in the padded layout.
  CategoricalIds ids(const CategoricalIds& values) const;

  /// The column's name (its feature's key).
  const std::string& key() const { return key_; }
  /// The number of ids.
  int64_t num_buckets() const { return num_buckets_; }

 private:
  std::string key_;
  int64_t num_buckets_;
  std::optional<int64_t> default_value_;
};

}  // namespace est::feature_columns
