#pragma once
/// Text inside an error message: from a user's file, quoted, its control bytes escaped so that
/// a NUL or a newline cannot cut the message short, and long text shortened; from another
/// library's error, put on one line.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace est {

/// `text` in single quotes with its control bytes (NUL, newline, escape…) and DEL written as
/// \xNN; text over `max_bytes` bytes keeps its first `max_bytes` and says how long it was:
/// "'abc…' (200000000 bytes)".
std::string QuotedText(std::string_view text, size_t max_bytes = 64);

/// The first `max_items` of `items`, each QuotedText, joined by ", ", then "and N more"
/// where there are more: "'a', 'b', 'c' and 999997 more".
std::string QuotedList(const std::vector<std::string>& items, size_t max_items = 10);

/// `text` on one line: trailing blanks and newlines dropped, the others replaced by "; ".
std::string OneLine(std::string text);

}  // namespace est
