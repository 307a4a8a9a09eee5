#include "distribute/rendezvous/error_text.h"

#include <cstdio>
#include <ctime>
#include <sstream>

namespace est::distribute {

std::string DescribeDuration(std::chrono::milliseconds duration) {
  const auto ms = duration.count();
  if (ms < 1000) return std::to_string(ms) + " ms";
  std::ostringstream out;
  out << static_cast<double>(ms) / 1000.0 << " s";
  return out.str();
}

std::string DescribeUtcTime(std::chrono::system_clock::time_point time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count() % 1000;
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char text[32];
  std::snprintf(text, sizeof(text), "%02d:%02d:%02d.%03d UTC", utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(millis));
  return text;
}

std::string DescribeRanks(const std::vector<int>& ranks) {
  // Runs of three or more ranks in a row as "4-9"; at most kMaxListed parts, then how many more.
  constexpr size_t kMaxListed = 20;
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  size_t listed = 0;
  for (size_t i = 0; i < ranks.size();) {
    size_t end = i + 1;
    while (end < ranks.size() && ranks[end] == ranks[end - 1] + 1) ++end;
    if (end - i < 3) end = i + 1;
    if (listed == kMaxListed) {
      text += " and " + std::to_string(ranks.size() - i) + " more";
      break;
    }
    text += (listed++ ? ", " : "") + std::to_string(ranks[i]) +
            (end - i >= 3 ? "-" + std::to_string(ranks[end - 1]) : std::string());
    i = end;
  }
  return text;
}

std::string DescribeKeys(const std::vector<std::string>& keys) {
  std::string text = keys.size() == 1 ? "key " : "keys ";
  for (size_t i = 0; i < keys.size(); ++i) text += (i ? ", '" : "'") + keys[i] + "'";
  return text;
}

}  // namespace est::distribute
