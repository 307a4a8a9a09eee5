#include "distribute/rendezvous/settings_agreement.h"

#include <map>

#include "common/error.h"
#include "distribute/rendezvous/store.h"

namespace est::distribute {
namespace {

constexpr char kSettingsKey[] = "strategy_settings/";
constexpr char kGroupSettingsKey[] = "strategy_settings/group";
constexpr char kLineSeparator = '\n';
constexpr char kValueSeparator = '=';

// "worker 1", "workers 0, 2".
std::string DescribeWorkers(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "worker " : "workers ";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

std::string Encode(const StrategySettings& settings) {
  std::string text;
  for (const auto& [name, value] : settings) text += name + kValueSeparator + value + kLineSeparator;
  return text;
}

std::map<std::string, std::string> Decode(const std::string& text) {
  std::map<std::string, std::string> settings;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find(kLineSeparator, start);
    const std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const size_t separator = line.find(kValueSeparator);
    if (separator != std::string::npos) settings[line.substr(0, separator)] = line.substr(separator + 1);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return settings;
}

}  // namespace

void CheckSameSettings(Store& store, int rank, int world_size, const StrategySettings& settings,
                       std::chrono::milliseconds timeout) {
  store.set(kSettingsKey + std::to_string(rank), Encode(settings));
  std::vector<std::map<std::string, std::string>> by_rank;
  for (int other = 0; other < world_size; ++other)
    by_rank.push_back(Decode(store.get(kSettingsKey + std::to_string(other), timeout)));
  std::string differences;
  for (const auto& [name, value] : settings) {
    std::map<std::string, std::vector<int>> holders;  // value -> ranks
    for (int other = 0; other < world_size; ++other) {
      const auto found = by_rank[static_cast<size_t>(other)].find(name);
      holders[found == by_rank[static_cast<size_t>(other)].end() ? "(unset)" : found->second].push_back(other);
    }
    if (holders.size() == 1) continue;
    differences += (differences.empty() ? "" : "; ") + name + " is";
    const char* separator = " ";
    for (const auto& [held, ranks] : holders) {
      differences += separator + held + " on " + DescribeWorkers(ranks);
      separator = " and ";
    }
  }
  EST_CHECK(differences.empty(), ConfigError, "the strategies of the ", world_size, " workers differ: ", differences,
            "; every worker must run with the same strategy settings");
}

void PublishGroupSettings(Store& store, const StrategySettings& settings) {
  store.set(kGroupSettingsKey, Encode(settings));
}

void CheckGroupSettings(Store& store, const StrategySettings& settings, std::chrono::milliseconds timeout) {
  const std::map<std::string, std::string> group = Decode(store.get(kGroupSettingsKey, timeout));
  std::string differences;
  for (const auto& [name, value] : settings) {
    const auto found = group.find(name);
    const std::string held = found == group.end() ? "(unset)" : found->second;
    if (held != value)
      differences +=
          (differences.empty() ? "" : "; ") + name + " is " + held + " in the group and " + value + " on this worker";
  }
  EST_CHECK(differences.empty(), ConfigError,
            "this worker cannot join the training group: its strategy differs: ", differences,
            "; every worker must run with the same strategy settings");
}

}  // namespace est::distribute
