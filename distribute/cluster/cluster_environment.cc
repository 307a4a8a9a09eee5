#include "distribute/cluster/cluster_environment.h"

#include <charconv>
#include <cstdlib>
#include <utility>

#include "common/error.h"

namespace est::distribute {

Environment ProcessEnvironment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

Environment EnvironmentOf(std::map<std::string, std::string> variables) {
  return [variables = std::move(variables)](const std::string& name) -> std::optional<std::string> {
    auto found = variables.find(name);
    if (found == variables.end()) return std::nullopt;
    return found->second;
  };
}

std::optional<int> ReadIntVariable(const Environment& env, const std::string& name, int min, int max) {
  std::optional<std::string> text = env(name);
  if (!text) return std::nullopt;
  int value = 0;
  const char* begin = text->data();
  const char* end = text->data() + text->size();
  auto [stop, error] = std::from_chars(begin, end, value);
  EST_CHECK(begin != end && stop == end && error != std::errc::invalid_argument, ConfigError, "environment variable ",
            name, "=\"", *text, "\" is not an integer");
  const bool in_range = error == std::errc() && value >= min && value <= max;
  if (!in_range && max == std::numeric_limits<int>::max()) {
    EST_THROW(ConfigError, "environment variable ", name, "=\"", *text, "\" is out of range: it must be at least ",
              min);
  }
  EST_CHECK(in_range, ConfigError, "environment variable ", name, "=\"", *text, "\" is out of range [", min, ", ", max,
            "]");
  return value;
}

int ReadRequiredIntVariable(const Environment& env, const std::string& name, int min, int max) {
  std::optional<int> value = ReadIntVariable(env, name, min, max);
  EST_CHECK(value.has_value(), ConfigError, "environment variable ", name, " is not set");
  return *value;
}

}  // namespace est::distribute
