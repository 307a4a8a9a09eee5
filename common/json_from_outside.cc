#include "common/json_from_outside.h"

#include <exception>

namespace est {
namespace {

// Thrown by the parser's callback, at the first value nested beyond the bound.
struct TooDeep : std::exception {
  const char* what() const noexcept override { return "nested too deep"; }
};

// The parser's message, which quotes the token it stopped at (a string of any length), cut short.
std::string Shortened(const char* message) {
  constexpr size_t kMaxBytes = 240;
  const std::string text = message;
  return text.size() <= kMaxBytes ? text : text.substr(0, kMaxBytes) + "...";
}

}  // namespace

ParsedJson ParseJsonFromOutside(std::string_view text, int max_depth) {
  ParsedJson parsed;
  const auto bound_depth = [max_depth](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    // An object's or array's start is seen at the depth of its container; its members one deeper.
    if ((event == nlohmann::json::parse_event_t::object_start || event == nlohmann::json::parse_event_t::array_start) &&
        depth >= max_depth)
      throw TooDeep();
    return true;
  };
  try {
    parsed.value = nlohmann::json::parse(text, bound_depth);
  } catch (const TooDeep&) {
    parsed.value = nullptr;
    parsed.error = "nested deeper than " + std::to_string(max_depth) + " arrays and objects";
  } catch (const nlohmann::json::parse_error& error) {
    parsed.value = nullptr;
    parsed.error = Shortened(error.what());
    parsed.error_byte = error.byte > 0 ? error.byte - 1 : 0;
  } catch (const nlohmann::json::exception& error) {  // a number too large for a double (1e400)
    parsed.value = nullptr;
    parsed.error = Shortened(error.what());
  }
  return parsed;
}

}  // namespace est
