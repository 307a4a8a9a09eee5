#include "common/quoted_text.h"

#include <cstdio>

namespace est {

std::string QuotedText(std::string_view text, size_t max_bytes) {
  const std::string_view shown = text.substr(0, max_bytes);
  std::string quoted = "'";
  for (const char c : shown) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7F) {
      char escaped[5];
      std::snprintf(escaped, sizeof(escaped), "\\x%02X", byte);
      quoted += escaped;
    } else {
      quoted += c;
    }
  }
  if (shown.size() < text.size()) return quoted + "…' (" + std::to_string(text.size()) + " bytes)";
  return quoted + "'";
}

std::string QuotedList(const std::vector<std::string>& items, size_t max_items) {
  std::string joined;
  for (size_t i = 0; i < items.size() && i < max_items; ++i) joined += (i == 0 ? "" : ", ") + QuotedText(items[i]);
  if (items.size() > max_items) joined += " and " + std::to_string(items.size() - max_items) + " more";
  return joined;
}

std::string OneLine(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  for (size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at)) text.replace(at, 1, "; ");
  return text;
}

}  // namespace est
