#pragma once
/// The ids of tf.feature_column.categorical_column_with_vocabulary_list and
/// categorical_column_with_vocabulary_file: a value's index in the vocabulary; a value
/// outside it gets vocabulary_size + Fingerprint64(value) % num_oov_buckets when the
/// column has out-of-vocabulary buckets, else default_value. Integer values hash as their
/// decimal text, as TensorFlow's lookup tables do.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "estimator/feature_columns/categorical_ids.h"

namespace est::feature_columns {

/// A vocabulary lookup of one column, of string or of int64 keys.
class Vocabulary {
 public:
  /// categorical_column_with_vocabulary_list of strings. ConfigError naming `key` for an
  /// empty or duplicated list, negative `num_oov_buckets`, or num_oov_buckets > 0 with a
  /// default_value other than -1 (TensorFlow accepts only one of the two).
  static Vocabulary FromList(std::string key, const std::vector<std::string>& list, int64_t num_oov_buckets = 0,
                             int64_t default_value = -1);
  /// categorical_column_with_vocabulary_list of integers (dtype int64), checked alike.
  static Vocabulary FromList(std::string key, const std::vector<int64_t>& list, int64_t num_oov_buckets = 0,
                             int64_t default_value = -1);

  /// categorical_column_with_vocabulary_file: one entry per line, the whole line, with a
  /// trailing "\r" dropped; the first `vocabulary_size` lines, or every line when it is not
  /// given. With `integer_keys` each line is a decimal int64 (dtype int64). As TensorFlow
  /// refuses them, ConfigError naming `key` and the file for: a missing file, no lines, an
  /// empty line or a repeated entry among those read, fewer lines than vocabulary_size, a
  /// line that is not an integer where integers are expected, and the option checks of
  /// FromList.
  static Vocabulary FromFile(std::string key, const std::string& path, std::optional<int64_t> vocabulary_size = {},
                             int64_t num_oov_buckets = 0, int64_t default_value = -1, bool integer_keys = false);

  /// The id of a string value; DataError for a vocabulary of integers.
  int64_t id(std::string_view value) const;
  /// The id of an integer value; DataError for a vocabulary of strings.
  int64_t id(int64_t value) const;

  /// The ids of a batch of string rows.
  CategoricalIds ids(const StringRows& rows) const;
  /// The ids of a batch of integer values in the padded layout.
  CategoricalIds ids(const CategoricalIds& values) const;

  /// The column's name (its feature's key).
  const std::string& key() const { return key_; }
  /// The number of entries.
  int64_t vocabulary_size() const { return size_; }
  /// The number of ids: vocabulary_size + num_oov_buckets.
  int64_t num_buckets() const { return size_ + num_oov_buckets_; }
  /// Whether the keys are integers.
  bool integer_keys() const { return integer_keys_; }
  /// A fingerprint of what the lookup does (entries in order, OOV buckets, default): equal
  /// vocabularies map every value alike.
  uint64_t fingerprint() const;

 private:
  Vocabulary(std::string key, int64_t num_oov_buckets, int64_t default_value, bool integer_keys);
  void add(std::string entry, const std::string& where);
  int64_t out_of_vocabulary(std::string_view text) const;

  std::string key_;
  int64_t num_oov_buckets_;
  int64_t default_value_;
  bool integer_keys_;
  int64_t size_ = 0;
  /// FingerprintCat64 over the entries' Fingerprint64s, in order.
  uint64_t fingerprint_ = 0;
  /// Entries by their text (an integer key by its decimal text).
  std::unordered_map<std::string, int64_t> index_;
};

}  // namespace est::feature_columns
