#pragma once
/// tf.feature_column.categorical_column_with_hash_bucket: ids by TensorFlow's string hash.

#include <cstdint>
#include <memory>
#include <string>

#include "estimator/feature_columns/feature_column.h"
#include "estimator/feature_columns/hash_bucket.h"

namespace est::feature_columns {

/// The kind of values a categorical feature holds (TensorFlow's dtype of the column).
enum class ValueType {
  kString,  ///< bytes values (tf.string)
  kInt64,   ///< integer values (tf.int64)
};

/// The hash bucket of each value: strings parse straight to their bucket; integers are hashed
/// as their decimal text when the model reads them.
class HashedCategoricalColumn : public CategoricalColumn {
 public:
  /// ConfigError as HashBucket.
  HashedCategoricalColumn(std::string key, int64_t hash_bucket_size, ValueType type);

  std::string name() const override { return hash_.key(); }
  void plan_parsing(ParsingPlan& plan) const override;
  int64_t num_buckets() const override { return hash_.num_buckets(); }
  CategoricalIds ids(const ColumnInputs& inputs) const override;

 private:
  std::string use() const;

  HashBucket hash_;
  ValueType type_;
};

/// tf.feature_column.categorical_column_with_hash_bucket(key, hash_bucket_size, dtype).
std::shared_ptr<const HashedCategoricalColumn> categorical_column_with_hash_bucket(
    std::string key, int64_t hash_bucket_size, ValueType type = ValueType::kString);

}  // namespace est::feature_columns
