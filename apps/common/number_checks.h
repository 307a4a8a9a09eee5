#pragma once
// CLI11 validators for numeric flags, checked in the type each flag is used as, whose errors
// name the range expected ("--max-steps: expected an integer from 1 to
// 9223372036854775807, got '2.5'"), unlike CLI11's ("Value -3 not in range ...").

#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <string>

namespace est_apps {

/// "1e+06" style is avoided: 1000000, 0.001, 86400.
inline std::string FormatBound(double value) {
  std::ostringstream out;
  out.precision(15);
  out << value;
  return out.str();
}

/// An integer flag of type T from `min` to `max`: the whole text must be a decimal integer
/// in that range ("2.5", "1e30", "-1" for an unsigned type, and anything beyond T are
/// refused). `what` names the quantity in the error, e.g. "an integer" or "a number of steps".
template <typename T>
CLI::Validator IntegerIn(T min, T max, const std::string& what = "an integer") {
  static_assert(std::is_integral_v<T>);
  const std::string expected = "expected " + what + " from " + std::to_string(min) + " to " + std::to_string(max);
  return CLI::Validator(
      [expected, min, max](std::string& text) -> std::string {
        T value{};
        const char* first = text.data();
        const char* last = text.data() + text.size();
        const auto [end, error] = std::from_chars(first, last, value);
        const bool parsed = !text.empty() && error == std::errc() && end == last;
        return parsed && value >= min && value <= max ? std::string() : expected + ", got '" + text + "'";
      },
      "INT in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
}

/// A finite real flag from `min` to `max` (each end included unless `open_min`). `what`
/// names the quantity, e.g. "a number of seconds".
inline CLI::Validator NumberIn(double min, double max, const std::string& what = "a number", bool open_min = false) {
  const std::string expected = "expected " + what + (open_min ? " above " : " from ") + FormatBound(min) + " to " +
                               FormatBound(max);
  return CLI::Validator(
      [expected, min, max, open_min](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        const bool number = !text.empty() && end != nullptr && *end == '\0' && std::isfinite(value);
        const bool in_range = (open_min ? value > min : value >= min) && value <= max;
        return number && in_range ? std::string() : expected + ", got '" + text + "'";
      },
      "NUMBER in " + std::string(open_min ? "(" : "[") + FormatBound(min) + ", " + FormatBound(max) + "]");
}

/// Seconds up to a year, converted to milliseconds (int64) without overflow.
inline constexpr double kMaxSeconds = 365.0 * 24 * 3600;

/// The largest int64_t, for "any positive count".
inline constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();

}  // namespace est_apps
