#include "estimator/best_checkpoints.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint_state.h"
#include "common/error.h"
#include "common/file_util.h"
#include "common/logging.h"
#include "estimator/summary/event_reader.h"

namespace est {
namespace {

// The basename of the checkpoint an evaluator task evaluates now, if one does.
std::optional<std::string> CheckpointInEvaluation(const std::string& eval_dir) {
  const std::filesystem::path path = std::filesystem::path(eval_dir) / kCheckpointInEvaluationName;
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return std::nullopt;
  try {
    std::string name = ReadFile(path.string());
    while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) name.pop_back();
    return name;
  } catch (const IoError&) {
    return std::nullopt;  // removed meanwhile: its results are written
  }
}

}  // namespace

checkpoint::ChooseKeptCheckpoints BestCheckpoints(std::string eval_dir, KeepBestCheckpoints options) {
  auto warned = std::make_shared<bool>(false);
  return [eval_dir = std::move(eval_dir), options = std::move(options),
          warned](const std::vector<std::string>& tracked) -> std::set<std::string> {
    std::map<int64_t, std::map<std::string, double>> results;
    try {
      results = ReadEvalMetrics(eval_dir);
    } catch (const Error& error) {
      Log().warn("keep_best_checkpoints: cannot read the evaluation results in {}: {}; no checkpoint is deleted "
                 "this time",
                 eval_dir, error.what());
      return {tracked.begin(), tracked.end()};
    }
    std::vector<std::pair<double, int64_t>> scored;  // (value, step)
    std::map<int64_t, std::string> prefix_of;
    for (const std::string& prefix : tracked) {
      const std::optional<int64_t> step = checkpoint::StepFromCheckpointPath(prefix);
      if (!step) continue;
      prefix_of[*step] = prefix;
      const auto result = results.find(*step);
      if (result == results.end()) continue;
      const auto value = result->second.find(options.metric());
      if (value != result->second.end() && !std::isnan(value->second)) scored.emplace_back(value->second, *step);
    }
    if (scored.empty() && !results.empty() && !*warned) {
      *warned = true;
      std::string names;
      for (const auto& [name, value] : results.rbegin()->second) names += (names.empty() ? "" : ", ") + name;
      Log().warn("keep_best_checkpoints: the evaluation results in {} have no metric '{}' for the checkpoints kept "
                 "(the latest has: {}); only the newest checkpoints are kept",
                 eval_dir, options.metric(), names);
    }
    std::sort(scored.begin(), scored.end(), [&](const auto& a, const auto& b) {
      if (a.first != b.first) return options.higher_is_better() ? a.first > b.first : a.first < b.first;
      return a.second < b.second;
    });
    std::set<std::string> best;
    for (size_t i = 0; i < scored.size() && i < static_cast<size_t>(options.count()); ++i)
      best.insert(prefix_of.at(scored[i].second));
    if (const std::optional<std::string> evaluating = CheckpointInEvaluation(eval_dir))
      for (const std::string& prefix : tracked)
        if (std::filesystem::path(prefix).filename() == *evaluating) best.insert(prefix);
    return best;
  };
}

}  // namespace est
