/// ParseTfConfig: TF_CONFIG's JSON read into a ClusterConfig; TfConfigJson, one written.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/json_from_outside.h"
#include "distribute/cluster/cluster_address.h"
#include "distribute/cluster/cluster_config.h"

namespace est::distribute {
namespace {

using nlohmann::json;

/// A JSON value as it appears in TF_CONFIG, shortened for a message.
std::string Quote(const json& value) {
  constexpr size_t kMaxLength = 80;
  std::string text = value.dump();
  return text.size() <= kMaxLength ? text : text.substr(0, kMaxLength) + "...";
}

/// The text around byte `position` of `text`.
std::string Snippet(const std::string& text, size_t position) {
  constexpr size_t kRadius = 20;
  size_t begin = position > kRadius ? position - kRadius : 0;
  return text.substr(begin, 2 * kRadius);
}

json ParseJson(const std::string& text) {
  ParsedJson parsed = ParseJsonFromOutside(text);
  EST_CHECK(parsed.ok(), ConfigError, "not valid JSON (", parsed.error, ")",
            parsed.error_byte > 0 ? " near \"" + Snippet(text, parsed.error_byte) + "\"" : "");
  return std::move(parsed.value);
}

/// A member of `object`, or null when it is absent.
json Member(const json& object, const char* key) {
  auto found = object.find(key);
  return found == object.end() ? json() : *found;
}

ClusterSpec ReadCluster(const json& value) {
  ClusterSpec cluster;
  if (value.is_null()) return cluster;
  EST_CHECK(value.is_object(), ConfigError, "\"cluster\" must be an object of jobs, got ", Quote(value));
  for (const auto& [job, tasks] : value.items()) {
    EST_CHECK(tasks.is_array(), ConfigError, "job \"", job, "\" must be a list of \"host:port\" strings, got ",
              Quote(tasks));
    std::vector<std::string>& addresses = cluster[job];
    for (const json& task : tasks) {
      std::string what = "job \"" + job + "\" task " + std::to_string(addresses.size());
      EST_CHECK(task.is_string(), ConfigError, what, " must be a \"host:port\" string, got ", Quote(task));
      ParseHostPort(task.get<std::string>(), what);
      addresses.push_back(task.get<std::string>());
    }
  }
  return cluster;
}

/// An optional sign and up to ten digits.
bool IsIntegerText(const std::string& text) {
  size_t digits = !text.empty() && (text[0] == '+' || text[0] == '-') ? 1 : 0;
  return text.size() > digits && text.size() - digits <= 10 &&
         std::all_of(text.begin() + digits, text.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

/// The task index as TensorFlow's int() takes it: a JSON integer, an integral number, or a
/// string of an integer.
int ReadTaskIndex(const json& index) {
  constexpr double kMin = std::numeric_limits<int>::min();
  constexpr double kMax = std::numeric_limits<int>::max();
  double value = std::nan("");
  if (index.is_number()) {
    value = index.get<double>();
  } else if (index.is_string() && IsIntegerText(index.get<std::string>())) {
    value = std::stod(index.get<std::string>());
  }
  EST_CHECK(std::isfinite(value) && value == std::trunc(value) && value >= kMin && value <= kMax, ConfigError,
            "task \"index\" must be an integer, got ", Quote(index));
  return static_cast<int>(value);
}

ClusterConfig Parse(const std::string& text) {
  json root = ParseJson(text);
  EST_CHECK(root.is_object(), ConfigError, "it must be a JSON object with \"cluster\" and \"task\", got ", Quote(root));
  ClusterSpec cluster = ReadCluster(Member(root, "cluster"));
  json task = Member(root, "task");
  if (task.is_null() || (task.is_object() && task.empty())) {
    EST_CHECK(cluster.empty(), ConfigError,
              "it has a \"cluster\" but no \"task\" (add \"task\": {\"type\": ..., \"index\": ...})");
    return MakeClusterConfig(cluster, "", 0, "TF_CONFIG");
  }
  EST_CHECK(task.is_object(), ConfigError, "\"task\" must be an object with \"type\" and \"index\", got ", Quote(task));
  json type = Member(task, "type");
  EST_CHECK(!type.is_null() && type != "", ConfigError, "\"task\" has no \"type\": ", Quote(task));
  EST_CHECK(type.is_string(), ConfigError, "task \"type\" must be a string, got ", Quote(type));
  json index = Member(task, "index");
  EST_CHECK(!index.is_null(), ConfigError, "\"task\" has no \"index\": ", Quote(task));
  return MakeClusterConfig(cluster, type.get<std::string>(), ReadTaskIndex(index), "TF_CONFIG");
}

}  // namespace

ClusterConfig ParseTfConfig(const std::string& tf_config_json) {
  try {
    return Parse(tf_config_json);
  } catch (const ConfigError& error) {
    EST_THROW(ConfigError, "invalid TF_CONFIG: ", error.what());
  }
}

std::string TfConfigJson(const ClusterSpec& cluster, TaskType type, int index) {
  const json config = {{"cluster", cluster}, {"task", {{"type", TaskTypeName(type)}, {"index", index}}}};
  return config.dump();
}

}  // namespace est::distribute
