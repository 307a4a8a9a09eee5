#pragma once
/// JSON from outside the process (TF_CONFIG, a peer's message, a file in model_dir or an
/// export), parsed with its nesting bounded: nlohmann::json copies, compares and dumps a value
/// by recursion, so a value nested 100 000 deep would overflow the stack of whatever touches
/// it after the parse. The parser itself does not recurse; its callback sees each depth, and
/// the parse stops at the first value nested too deep.

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace est {

/// The deepest nesting of arrays and objects accepted: far above any configuration's, far
/// below what overflows a thread's stack.
inline constexpr int kMaxJsonDepth = 100;

/// A parse of JSON from outside: the value, or why there is none.
struct ParsedJson {
  /// The value; discarded (null) when `error` is set.
  nlohmann::json value;
  /// Empty when the text is JSON nested at most kMaxJsonDepth deep; else what is wrong, on
  /// one line: the parser's message (at most 240 bytes of it), or "nested deeper than 100
  /// arrays and objects".
  std::string error;
  /// Where the error was found: the byte offset into the text (0 when not known).
  size_t error_byte = 0;

  bool ok() const { return error.empty(); }
};

/// Parses `text` as one JSON value nested at most `max_depth` deep. Never throws for bad
/// text, never recurses on it.
ParsedJson ParseJsonFromOutside(std::string_view text, int max_depth = kMaxJsonDepth);

}  // namespace est
