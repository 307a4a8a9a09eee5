#include "estimator/feature_columns/vocabulary.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <utility>

#include "common/error.h"
#include "estimator/feature_columns/fingerprint.h"
#include "estimator/feature_columns/hash_bucket.h"
#include "estimator/feature_columns/id_mapping.h"

namespace est::feature_columns {

namespace {

// The int64 a vocabulary file's line holds, between optional blanks; nullopt otherwise.
std::optional<int64_t> ParseVocabularyInteger(std::string_view line) {
  const size_t first = line.find_first_not_of(" \t");
  const size_t last = line.find_last_not_of(" \t");
  if (first == std::string_view::npos) return std::nullopt;
  const std::string_view digits = line.substr(first, last - first + 1);
  int64_t value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

}  // namespace

Vocabulary::Vocabulary(std::string key, int64_t num_oov_buckets, int64_t default_value, bool integer_keys)
    : key_(std::move(key)), num_oov_buckets_(num_oov_buckets), default_value_(default_value),
      integer_keys_(integer_keys) {
  EST_CHECK(num_oov_buckets_ >= 0, ConfigError, "vocabulary column '", key_,
            "': num_oov_buckets must not be negative, got ", num_oov_buckets_);
  EST_CHECK(num_oov_buckets_ == 0 || default_value_ == -1, ConfigError, "vocabulary column '", key_,
            "': give num_oov_buckets (", num_oov_buckets_, ") or default_value (", default_value_, "), not both");
}

void Vocabulary::add(std::string entry, const std::string& where) {
  fingerprint_ = FingerprintCat64(fingerprint_, Fingerprint64(entry));
  const auto [it, added] = index_.emplace(std::move(entry), size_);
  EST_CHECK(added, ConfigError, "vocabulary column '", key_, "': ", where, " repeats the entry '", it->first,
            "' (entry ", it->second, "); every entry must be distinct");
  ++size_;
}

Vocabulary Vocabulary::FromList(std::string key, const std::vector<std::string>& list, int64_t num_oov_buckets,
                                int64_t default_value) {
  Vocabulary vocabulary(std::move(key), num_oov_buckets, default_value, /*integer_keys=*/false);
  EST_CHECK(!list.empty(), ConfigError, "vocabulary column '", vocabulary.key_, "': the vocabulary list is empty");
  for (size_t i = 0; i < list.size(); ++i) vocabulary.add(list[i], Concat("entry ", i));
  return vocabulary;
}

Vocabulary Vocabulary::FromList(std::string key, const std::vector<int64_t>& list, int64_t num_oov_buckets,
                                int64_t default_value) {
  Vocabulary vocabulary(std::move(key), num_oov_buckets, default_value, /*integer_keys=*/true);
  EST_CHECK(!list.empty(), ConfigError, "vocabulary column '", vocabulary.key_, "': the vocabulary list is empty");
  for (size_t i = 0; i < list.size(); ++i) vocabulary.add(IntegerAsString(list[i]), Concat("entry ", i));
  return vocabulary;
}

Vocabulary Vocabulary::FromFile(std::string key, const std::string& path, std::optional<int64_t> vocabulary_size,
                                int64_t num_oov_buckets, int64_t default_value, bool integer_keys) {
  Vocabulary vocabulary(std::move(key), num_oov_buckets, default_value, integer_keys);
  const std::string& name = vocabulary.key_;
  EST_CHECK(!vocabulary_size || *vocabulary_size >= 1, ConfigError, "vocabulary column '", name,
            "': vocabulary_size must be at least 1, got ", *vocabulary_size);
  std::ifstream file(path, std::ios::binary);
  EST_CHECK(file.is_open(), ConfigError, "vocabulary column '", name, "': cannot open the vocabulary file ", path);
  std::string line;
  int64_t line_number = 0;
  while ((!vocabulary_size || line_number < *vocabulary_size) && std::getline(file, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string where = Concat(path, " line ", line_number);
    EST_CHECK(!line.empty(), ConfigError, "vocabulary column '", name, "': ", where,
              " is empty; every line of a vocabulary file must hold an entry");
    if (integer_keys) {
      const std::optional<int64_t> value = ParseVocabularyInteger(line);
      EST_CHECK(value.has_value(), ConfigError, "vocabulary column '", name, "': ", where, " ('", line,
                "') is not an int64 entry");
      line = IntegerAsString(*value);
    }
    vocabulary.add(std::move(line), where);
  }
  EST_CHECK(line_number > 0, ConfigError, "vocabulary column '", name, "': the vocabulary file ", path,
            " has no entries");
  EST_CHECK(!vocabulary_size || line_number == *vocabulary_size, ConfigError, "vocabulary column '", name,
            "': vocabulary_size is ", *vocabulary_size, " but ", path, " has only ", line_number, " lines");
  return vocabulary;
}

uint64_t Vocabulary::fingerprint() const {
  uint64_t options = FingerprintCat64(static_cast<uint64_t>(num_oov_buckets_), static_cast<uint64_t>(default_value_));
  return FingerprintCat64(FingerprintCat64(fingerprint_, options), integer_keys_ ? 1 : 0);
}

int64_t Vocabulary::out_of_vocabulary(std::string_view text) const {
  if (num_oov_buckets_ == 0) return default_value_;
  return size_ + StringToHashBucketFast(text, num_oov_buckets_);
}

int64_t Vocabulary::id(std::string_view value) const {
  EST_CHECK(!integer_keys_, DataError, "vocabulary column '", key_,
            "' has int64 keys but was given the string value '", value, "'");
  const auto found = index_.find(std::string(value));
  return found != index_.end() ? found->second : out_of_vocabulary(value);
}

int64_t Vocabulary::id(int64_t value) const {
  EST_CHECK(integer_keys_, DataError, "vocabulary column '", key_, "' has string keys but was given the integer ",
            value);
  const std::string text = IntegerAsString(value);
  const auto found = index_.find(text);
  return found != index_.end() ? found->second : out_of_vocabulary(text);
}

CategoricalIds Vocabulary::ids(const StringRows& rows) const {
  return detail::MapStringRows(rows, [this](const std::string& value) { return id(std::string_view(value)); });
}

CategoricalIds Vocabulary::ids(const CategoricalIds& values) const {
  CheckLayout(values, key_);
  return detail::MapValues(values, [this](int64_t value) { return id(value); });
}

}  // namespace est::feature_columns
