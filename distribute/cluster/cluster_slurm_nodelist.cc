#include "distribute/cluster/cluster_slurm_nodelist.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>

#include "common/error.h"

namespace est::distribute {
namespace {

constexpr size_t kMaxHosts = size_t{1} << 20;
// The longest host name (RFC 1035: 253 characters in its text form).
constexpr size_t kMaxHostName = 253;

/// `nodelist` in double quotes as an error quotes it: whole up to 200 characters, else its
/// first 64 and how long it is.
std::string Quoted(const std::string& nodelist) {
  if (nodelist.size() <= 200) return "\"" + nodelist + "\"";
  return "\"" + nodelist.substr(0, 64) + "...\" (" + std::to_string(nodelist.size()) + " characters)";
}

/// Splits `text` at the commas outside brackets.
std::vector<std::string> SplitTopLevel(const std::string& text) {
  std::vector<std::string> items(1);
  int depth = 0;
  for (char c : text) {
    depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    if (c == ',' && depth == 0) {
      items.emplace_back();
    } else {
      items.back() += c;
    }
  }
  return items;
}

bool IsNumber(const std::string& text) {
  return !text.empty() && text.size() <= 18 &&
         std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

int64_t ToNumber(const std::string& text) {
  int64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

/// `value` in decimal, zero-padded to `width` digits.
std::string Padded(int64_t value, size_t width) {
  std::string digits = std::to_string(value);
  return std::string(width > digits.size() ? width - digits.size() : 0, '0') + digits;
}

/// The values of a bracket's contents: "03-05,09" -> 03 04 05 09.
std::vector<std::string> ExpandBracket(const std::string& contents, const std::string& nodelist) {
  std::vector<std::string> values;
  for (const std::string& range : SplitTopLevel(contents)) {
    auto dash = range.find('-');
    std::string low = range.substr(0, dash);
    std::string high = dash == std::string::npos ? low : range.substr(dash + 1);
    EST_CHECK(IsNumber(low) && IsNumber(high) && ToNumber(low) <= ToNumber(high), ConfigError, "Slurm node list ",
              Quoted(nodelist), ": range \"", range, "\" is not \"N\" or \"N-M\" with N <= M");
    EST_CHECK(ToNumber(high) - ToNumber(low) < static_cast<int64_t>(kMaxHosts), ConfigError, "Slurm node list ",
              Quoted(nodelist), " names more than ", kMaxHosts, " hosts");
    for (int64_t n = ToNumber(low); n <= ToNumber(high); ++n) values.push_back(Padded(n, low.size()));
  }
  return values;
}

/// Appends the hosts of one item ("node[03-05]-ib") to `hosts`.
void ExpandItem(const std::string& item, const std::string& nodelist, std::vector<std::string>& hosts) {
  EST_CHECK(!item.empty(), ConfigError, "Slurm node list ", Quoted(nodelist), " has an empty item");
  std::vector<std::string> expanded = {""};
  size_t position = 0;
  while (position < item.size()) {
    size_t open = item.find_first_of("[]", position);
    std::string literal = item.substr(position, open == std::string::npos ? std::string::npos : open - position);
    for (auto& host : expanded) host += literal;
    if (open == std::string::npos) break;
    size_t close = item.find_first_of("[]", open + 1);
    EST_CHECK(item[open] == '[' && close != std::string::npos && item[close] == ']', ConfigError, "Slurm node list ",
              Quoted(nodelist), " has unbalanced or nested brackets in ", Quoted(item));
    std::vector<std::string> values = ExpandBracket(item.substr(open + 1, close - open - 1), nodelist);
    EST_CHECK(expanded.size() * values.size() + hosts.size() <= kMaxHosts, ConfigError, "Slurm node list ",
              Quoted(nodelist), " names more than ", kMaxHosts, " hosts");
    std::vector<std::string> next;
    next.reserve(expanded.size() * values.size());
    for (const auto& prefix : expanded) {
      for (const auto& value : values) next.push_back(prefix + value);
    }
    expanded = std::move(next);
    position = close + 1;
  }
  for (const std::string& host : expanded)
    EST_CHECK(host.size() <= kMaxHostName, ConfigError, "Slurm node list ", Quoted(nodelist), " names a host of ",
              host.size(), " characters; a host name has at most ", kMaxHostName);
  hosts.insert(hosts.end(), expanded.begin(), expanded.end());
}

}  // namespace

std::vector<std::string> ExpandSlurmNodelist(const std::string& nodelist) {
  EST_CHECK(!nodelist.empty(), ConfigError, "Slurm node list is empty");
  std::vector<std::string> hosts;
  for (const std::string& item : SplitTopLevel(nodelist)) ExpandItem(item, nodelist, hosts);
  return hosts;
}

}  // namespace est::distribute
