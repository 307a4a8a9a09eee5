#pragma once
/// TensorFlow 2.15's categorical feature-column ids for the inputs of make_tensorflow_ids.py
/// (tensorflow_ids.inc), and helpers that find an input by name.

#include <ATen/ATen.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "estimator/feature_columns/categorical_ids.h"

namespace est::feature_columns::tensorflow_ids {

/// A string of `size` bytes (the .inc's strings may hold NUL bytes).
inline std::string S(const char* bytes, size_t size) { return std::string(bytes, size); }

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

/// A batch of strings, sparse (VarLen) or dense (FixedLen [batch, k]).
struct StringInput {
  const char* name;
  StringRows rows;
  bool dense;
};
/// A batch of int64 values, sparse or dense.
struct IntInput {
  const char* name;
  IntRows rows;
  bool dense;
};
/// A numeric batch [batch, k] of `dtype` ("float32", "float64" or "int64").
struct NumericInput {
  const char* name;
  std::vector<std::vector<double>> rows;
  const char* dtype;
};
struct FingerprintValue {
  std::string value;
  uint64_t fingerprint;
};
struct RawCross {
  uint64_t hash_key;
  std::vector<int64_t> features;
  uint64_t hash;
};
struct HashBucketCase {
  const char* input;
  int64_t hash_bucket_size;
  IntRows ids;
};
struct VocabularyListCase {
  const char* input;
  std::vector<std::string> strings;
  std::vector<int64_t> integers;
  int64_t num_oov_buckets;
  int64_t default_value;
  IntRows ids;
};
struct VocabularyFileCase {
  const char* file;
  const char* input;
  int64_t vocabulary_size;  // 0: every line
  int64_t num_oov_buckets;
  int64_t default_value;
  IntRows ids;
};
struct VocabularyFile {
  const char* name;
  std::string contents;
};
struct IdentityCase {
  const char* input;
  int64_t num_buckets;
  int64_t default_value;  // -1: none
  IntRows ids;
};
struct BucketizedCase {
  const char* input;
  std::vector<double> boundaries;
  IntRows ids;
  IntRows buckets;
};
/// One crossed part: "string" or "int" (a raw feature), "vocabulary" (a vocabulary list
/// column with `parameter` OOV buckets) or "bucketized" (boundaries 0, 1, 10).
struct CrossPart {
  const char* kind;
  const char* input;
  int64_t parameter;
};
struct CrossCase {
  std::vector<CrossPart> parts;
  int64_t hash_bucket_size;
  uint64_t hash_key;
  IntRows ids;
};

#include "tests/estimator/feature_columns/tensorflow_ids.inc"

/// The string batch named `name`, with the empty strings of a dense one dropped when
/// `drop_ignored` (as TensorFlow's categorical columns do).
inline StringRows StringBatch(const std::string& name, bool drop_ignored = true) {
  for (const StringInput& input : kStringInputs)
    if (name == input.name) return input.dense && drop_ignored ? DropIgnoredValues(input.rows) : input.rows;
  FAIL("no string input " << name);
  return {};
}

/// Whether `name` is a string batch.
inline bool IsStringInput(const std::string& name) {
  for (const StringInput& input : kStringInputs)
    if (name == input.name) return true;
  return false;
}

/// Whether the batch `name` (strings or integers) is dense.
inline bool IsDenseInput(const std::string& name) {
  for (const StringInput& input : kStringInputs)
    if (name == input.name) return input.dense;
  for (const IntInput& input : kIntInputs)
    if (name == input.name) return input.dense;
  return false;
}

/// The integer batch named `name` in the padded layout; a dense one without its -1s when
/// `drop_ignored`.
inline CategoricalIds IntBatch(const std::string& name, bool drop_ignored = true) {
  for (const IntInput& input : kIntInputs) {
    if (name != input.name) continue;
    if (!input.dense || !drop_ignored) return IdsFromRows(input.rows);
    std::vector<int64_t> flat;
    for (const std::vector<int64_t>& row : input.rows) flat.insert(flat.end(), row.begin(), row.end());
    const auto batch = static_cast<int64_t>(input.rows.size());
    return DropIgnoredValues(at::tensor(flat, at::kLong).view({batch, -1}), name);
  }
  FAIL("no integer input " << name);
  return {};
}

/// The numeric batch named `name` as a [batch, k] tensor of its dtype.
inline at::Tensor NumericBatch(const std::string& name) {
  for (const NumericInput& input : kNumericInputs) {
    if (name != input.name) continue;
    std::vector<double> flat;
    for (const std::vector<double>& row : input.rows) flat.insert(flat.end(), row.begin(), row.end());
    const auto batch = static_cast<int64_t>(input.rows.size());
    const at::Tensor values = at::tensor(flat, at::kDouble).view({batch, -1});
    if (std::strcmp(input.dtype, "float32") == 0) return values.to(at::kFloat);
    if (std::strcmp(input.dtype, "int64") == 0) return values.to(at::kLong);
    return values;
  }
  FAIL("no numeric input " << name);
  return {};
}

}  // namespace est::feature_columns::tensorflow_ids
