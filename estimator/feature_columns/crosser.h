#pragma once
/// The ids of tf.feature_column.crossed_column (TensorFlow's SparseCross op, hashed):
/// every combination of one value from each crossed input, per example, each hashed to
///   FingerprintCat64(... FingerprintCat64(FingerprintCat64(hash_key, f1), f2) ..., fn)
///   % hash_bucket_size
/// where fi is what the i-th input's value contributes: a string its Fingerprint64, an
/// integer feature value or a categorical column's id (hash bucket, vocabulary, identity,
/// bucketized) the int64 itself. Combinations come in TensorFlow's order: the inputs'
/// values as odometer digits, the last input's changing fastest. An example where one
/// input has no value has no crosses.
///
/// TensorFlow hands SparseCross the categorical columns' ids and raw features as they
/// are; a raw feature that reaches it as a dense tensor (a FixedLen feature, not a VarLen
/// one) is crossed after all the sparse inputs, whatever its place in the column's keys,
/// and keeps its empty strings and -1s. CrossInput::dense marks such an input.

#include <cstdint>
#include <string>
#include <vector>

#include "estimator/feature_columns/categorical_ids.h"

namespace est::feature_columns {

/// crossed_column's default hash_key (sparse_ops' _DEFAULT_HASH_KEY).
inline constexpr uint64_t kDefaultCrossHashKey = 0xDECAFCAFFEULL;

/// One input of a cross: per example, the int64 that each of its values contributes.
struct CrossInput {
  /// Ids, integer values, or string fingerprints (their uint64 bits) in the padded layout.
  CategoricalIds values;
  /// A raw feature TensorFlow would see as a dense tensor: crossed after the sparse inputs.
  bool dense = false;

  /// A raw string feature: the Fingerprint64 of each value.
  static CrossInput Strings(const StringRows& rows, bool dense = false);
  /// Ids of a categorical column, or the values of a raw integer feature.
  static CrossInput Ids(CategoricalIds ids, bool dense = false);
};

/// The hashing of one crossed_column.
class Crosser {
 public:
  /// The column `name` with `hash_bucket_size` buckets; hash_key 0 means the default, as
  /// in TensorFlow. ConfigError naming the column for a size below 1.
  Crosser(std::string name, int64_t hash_bucket_size, uint64_t hash_key = kDefaultCrossHashKey);

  /// The id of one combination: what each input's value contributes, in crossing order.
  int64_t id(const std::vector<int64_t>& features) const;

  /// The ids of a batch: at least two inputs with the same batch size (ConfigError for
  /// fewer or for an input with weights, DataError naming the column for unequal batches),
  /// sparse ones crossed first in their order, then dense ones in theirs. A row holds the
  /// product of its inputs' lengths.
  CategoricalIds ids(const std::vector<CrossInput>& inputs) const;

  /// The column's name.
  const std::string& name() const { return name_; }
  /// The number of ids: hash_bucket_size.
  int64_t num_buckets() const { return hash_bucket_size_; }

 private:
  std::string name_;
  int64_t hash_bucket_size_;
  uint64_t hash_key_;
};

}  // namespace est::feature_columns
