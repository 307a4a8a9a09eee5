#pragma once
// A value of est-train's JSON spec file with where it stands in it (the file and the JSON
// path), so that every error names both and what was expected:
//   "model.json: columns.user.categorical_column_with_hash_bucket.hash_bucket_size: expected
//   an integer from 1 to 9223372036854775807, got -5".

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace est_train {

/// A JSON value of a spec file and its path there; the readers throw est::ConfigError
/// naming the file, the path and what was expected.
class SpecValue {
 public:
  /// The whole of spec file `file` (ConfigError naming it when unreadable or not JSON).
  static SpecValue ReadFile(const std::string& file);
  /// `value` at `path` of `file` (the root when `path` is empty).
  SpecValue(nlohmann::json value, std::string file, std::string path);

  /// The JSON value.
  const nlohmann::json& json() const { return value_; }
  /// The JSON path ("columns.user.dimension", "dnn_hidden_units[1]"; "the spec" at the root).
  std::string path() const { return path_.empty() ? "the spec" : path_; }
  /// The spec file.
  const std::string& file() const { return file_; }
  /// Throws ConfigError "FILE: PATH: MESSAGE".
  [[noreturn]] void fail(const std::string& message) const;
  /// Throws ConfigError "FILE: PATH: expected EXPECTED, got <the value>".
  [[noreturn]] void expected(const std::string& expected) const;

  /// An object whose keys are all among `keys`; ConfigError naming an unknown key (with the
  /// keys allowed) or a value that is not an object.
  void expect_object(const std::vector<std::string>& keys) const;
  /// Whether this object has `key` with a value other than null.
  bool has(const std::string& key) const;
  /// The value of `key`; ConfigError when it is missing or null.
  SpecValue at(const std::string& key) const;
  /// An array's elements (ConfigError otherwise); `min_size` of them at least.
  std::vector<SpecValue> items(size_t min_size = 0) const;
  /// An object's members by key.
  std::vector<std::pair<std::string, SpecValue>> members() const;

  /// A non-empty string.
  std::string string() const;
  /// One of `choices`.
  std::string choice(const std::vector<std::string>& choices) const;
  /// A JSON integer (not 2.0) from `min` to `max`.
  int64_t integer(int64_t min, int64_t max) const;
  /// A JSON integer from 0 to 2^64 - 1.
  uint64_t unsigned_integer() const;
  /// A number from `min` to `max` (open at `min` when `open_min`).
  double number(double min, double max, bool open_min = false) const;
  /// true or false.
  bool boolean() const;
  /// An array of non-empty strings (or one string, read as an array of it).
  std::vector<std::string> strings(size_t min_size = 1) const;
  /// An array of integers from `min` to `max`.
  std::vector<int64_t> integers(int64_t min, int64_t max, size_t min_size = 1) const;
  /// An array of numbers (or one number) from `min` to `max`.
  std::vector<double> numbers(double min, double max, size_t min_size = 1) const;

 private:
  nlohmann::json value_;
  std::string file_;
  std::string path_;
};

}  // namespace est_train
