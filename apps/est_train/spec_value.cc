#include "apps/est_train/spec_value.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "apps/common/number_checks.h"
#include "common/error.h"

namespace est_train {
namespace {

// The value as it is written in JSON, cut short where long.
std::string Shown(const nlohmann::json& value) {
  std::string text = value.dump();
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

std::string Listed(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

}  // namespace

SpecValue SpecValue::ReadFile(const std::string& file) {
  std::ifstream in(file);
  EST_CHECK(in, est::ConfigError, "cannot read the spec file '", file, "'");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return SpecValue(nlohmann::json::parse(text.str()), file, "");
  } catch (const nlohmann::json::parse_error& error) {
    throw est::ConfigError(est::Concat(file, ": not JSON: ", error.what()));
  }
}

SpecValue::SpecValue(nlohmann::json value, std::string file, std::string path)
    : value_(std::move(value)), file_(std::move(file)), path_(std::move(path)) {}

void SpecValue::fail(const std::string& message) const {
  throw est::ConfigError(est::Concat(file_, ": ", path(), ": ", message));
}

void SpecValue::expected(const std::string& expected) const { fail("expected " + expected + ", got " + Shown(value_)); }

void SpecValue::expect_object(const std::vector<std::string>& keys) const {
  if (!value_.is_object()) expected("an object with keys among " + Listed(keys));
  for (const auto& [key, value] : value_.items()) {
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
    throw est::ConfigError(est::Concat(file_, ": ", path_.empty() ? "" : path_ + ".", key, ": unknown key; ",
                                       path(), " takes ", Listed(keys)));
  }
}

bool SpecValue::has(const std::string& key) const {
  return value_.is_object() && value_.contains(key) && !value_.at(key).is_null();
}

SpecValue SpecValue::at(const std::string& key) const {
  const std::string path = path_.empty() ? key : path_ + "." + key;
  if (!has(key)) throw est::ConfigError(est::Concat(file_, ": ", path, ": missing; ", this->path(), " needs it"));
  return SpecValue(value_.at(key), file_, path);
}

std::vector<SpecValue> SpecValue::items(size_t min_size) const {
  if (!value_.is_array() || value_.size() < min_size)
    expected(min_size == 0 ? "an array" : "an array of at least " + std::to_string(min_size) + " elements");
  std::vector<SpecValue> items;
  for (size_t i = 0; i < value_.size(); ++i)
    items.emplace_back(value_[i], file_, path_ + "[" + std::to_string(i) + "]");
  return items;
}

std::vector<std::pair<std::string, SpecValue>> SpecValue::members() const {
  if (!value_.is_object()) expected("an object");
  std::vector<std::pair<std::string, SpecValue>> members;
  for (const auto& [key, value] : value_.items())
    members.emplace_back(key, SpecValue(value, file_, path_.empty() ? key : path_ + "." + key));
  return members;
}

std::string SpecValue::string() const {
  if (!value_.is_string() || value_.get<std::string>().empty()) expected("a non-empty string");
  return value_.get<std::string>();
}

std::string SpecValue::choice(const std::vector<std::string>& choices) const {
  if (!value_.is_string() || std::find(choices.begin(), choices.end(), value_.get<std::string>()) == choices.end())
    expected("one of " + Listed(choices));
  return value_.get<std::string>();
}

int64_t SpecValue::integer(int64_t min, int64_t max) const {
  const std::string range = "an integer from " + std::to_string(min) + " to " + std::to_string(max);
  if (value_.is_number_unsigned()) {
    const uint64_t value = value_.get<uint64_t>();
    if (max < 0 || value > static_cast<uint64_t>(max)) expected(range);
    if (static_cast<int64_t>(value) < min) expected(range);
    return static_cast<int64_t>(value);
  }
  if (!value_.is_number_integer()) expected(range);
  const int64_t value = value_.get<int64_t>();
  if (value < min || value > max) expected(range);
  return value;
}

uint64_t SpecValue::unsigned_integer() const {
  if (value_.is_number_unsigned()) return value_.get<uint64_t>();
  if (value_.is_number_integer() && value_.get<int64_t>() >= 0) return static_cast<uint64_t>(value_.get<int64_t>());
  expected("an integer from 0 to 18446744073709551615");
}

double SpecValue::number(double min, double max, bool open_min) const {
  const std::string range = std::string("a number ") + (open_min ? "above " : "from ") + est_apps::FormatBound(min) +
                            (open_min ? " up to " : " to ") + est_apps::FormatBound(max);
  if (!value_.is_number()) expected(range);
  const double value = value_.get<double>();
  if (!std::isfinite(value) || value < min || value > max || (open_min && value == min)) expected(range);
  return value;
}

bool SpecValue::boolean() const {
  if (!value_.is_boolean()) expected("true or false");
  return value_.get<bool>();
}

std::vector<std::string> SpecValue::strings(size_t min_size) const {
  if (value_.is_string() && min_size <= 1) return {string()};
  std::vector<std::string> strings;
  for (const SpecValue& item : items(min_size)) strings.push_back(item.string());
  return strings;
}

std::vector<int64_t> SpecValue::integers(int64_t min, int64_t max, size_t min_size) const {
  std::vector<int64_t> integers;
  for (const SpecValue& item : items(min_size)) integers.push_back(item.integer(min, max));
  return integers;
}

std::vector<double> SpecValue::numbers(double min, double max, size_t min_size) const {
  if (value_.is_number() && min_size <= 1) return {number(min, max)};
  std::vector<double> numbers;
  for (const SpecValue& item : items(min_size)) numbers.push_back(item.number(min, max));
  return numbers;
}

}  // namespace est_train
