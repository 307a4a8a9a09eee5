#pragma once
/// tf.feature_column.crossed_column: every combination of the values of several features or
/// categorical columns, hashed into buckets (Crosser).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "estimator/feature_columns/crosser.h"
#include "estimator/feature_columns/feature_column.h"

namespace est::feature_columns {

/// One key of a cross: the name of a string feature, or a categorical column (not a hashed one,
/// which TensorFlow refuses; a crossed one contributes its own keys).
struct CrossKey {
  /// A string feature, crossed by its values' fingerprints.
  CrossKey(std::string feature) : feature(std::move(feature)) {}  // NOLINT: implicit, as in TF's list
  /// A string feature, crossed by its values' fingerprints.
  CrossKey(const char* feature) : feature(feature) {}  // NOLINT: implicit
  /// A categorical column, crossed by its ids.
  template <typename Column>
  CrossKey(std::shared_ptr<const Column> column) : column(std::move(column)) {}  // NOLINT: implicit

  std::string feature;
  CategoricalColumnPtr column;
};

/// The crosses of its keys' values: num_buckets() = hash_bucket_size.
class CrossedColumn : public CategoricalColumn {
 public:
  /// ConfigError for fewer than two keys, a hashed or weighted categorical key, a null column or
  /// a hash_bucket_size below 1.
  CrossedColumn(std::vector<CrossKey> keys, int64_t hash_bucket_size, uint64_t hash_key);

  /// The keys' names sorted and joined by "_X_" ("category_X_device").
  std::string name() const override;
  void plan_parsing(ParsingPlan& plan) const override;
  int64_t num_buckets() const override { return crosser_.num_buckets(); }
  CategoricalIds ids(const ColumnInputs& inputs) const override;

  /// The keys crossed, crossed columns among the given ones replaced by their keys.
  const std::vector<CrossKey>& keys() const { return leaves_; }

 private:
  std::vector<CrossKey> leaves_;
  Crosser crosser_;
};

/// tf.feature_column.crossed_column(keys, hash_bucket_size, hash_key); hash_key 0 is TF's default.
std::shared_ptr<const CrossedColumn> crossed_column(std::vector<CrossKey> keys, int64_t hash_bucket_size,
                                                    uint64_t hash_key = kDefaultCrossHashKey);

}  // namespace est::feature_columns
