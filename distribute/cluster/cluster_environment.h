#pragma once
/// Environment: the variables a cluster resolver reads, behind a function so that tests can
/// inject their own.

#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>

namespace est::distribute {

/// Reads a variable: its value, or nullopt when it is not set.
using Environment = std::function<std::optional<std::string>(const std::string& name)>;

/// The process's environment (std::getenv).
Environment ProcessEnvironment();

/// An environment holding exactly `variables`.
Environment EnvironmentOf(std::map<std::string, std::string> variables);

/// The value of variable `name` as an integer in [min, max], or nullopt when it is not set.
/// Throws ConfigError naming the variable and quoting its value otherwise.
std::optional<int> ReadIntVariable(const Environment& env, const std::string& name,
                                   int min = std::numeric_limits<int>::min(),
                                   int max = std::numeric_limits<int>::max());

/// As ReadIntVariable, but a variable that is not set is a ConfigError naming it.
int ReadRequiredIntVariable(const Environment& env, const std::string& name, int min = std::numeric_limits<int>::min(),
                            int max = std::numeric_limits<int>::max());

}  // namespace est::distribute
