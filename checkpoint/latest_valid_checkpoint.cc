#include "checkpoint/latest_valid_checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "checkpoint/checkpoint_files.h"
#include "checkpoint/checkpoint_manager.h"
#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_state.h"
#include "common/error.h"
#include "common/logging.h"

namespace est::checkpoint {
namespace {

namespace fs = std::filesystem;

/// Prefixes of the `model.ckpt-<step>.index` files in `dir`, by descending step.
std::vector<std::string> CheckpointsOnDisk(const std::string& dir) {
  constexpr std::string_view kIndexSuffix = ".index";
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kCheckpointBasename, 0) != 0 || name.size() <= kIndexSuffix.size() ||
        name.compare(name.size() - kIndexSuffix.size(), kIndexSuffix.size(), kIndexSuffix) != 0) {
      continue;
    }
    const std::string prefix =
        (fs::path(dir) / name.substr(0, name.size() - kIndexSuffix.size())).string();
    if (auto step = StepFromCheckpointPath(prefix)) found.emplace_back(*step, prefix);
  }
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> prefixes;
  for (auto& [step, prefix] : found) prefixes.push_back(std::move(prefix));
  return prefixes;
}

/// Every candidate, most preferred first, without repeats; those outside `dir` are rejected.
std::vector<std::string> Candidates(const std::string& dir, std::vector<RejectedCheckpoint>& rejected) {
  std::vector<std::string> candidates;
  try {
    if (auto state = ReadCheckpointState(dir)) {
      candidates.push_back(state->model_checkpoint_path);
      const auto& paths = state->all_model_checkpoint_paths;
      candidates.insert(candidates.end(), paths.rbegin(), paths.rend());
    }
  } catch (const CheckpointError& error) {
    Log().warn("{}; looking for checkpoint files in {} instead", error.what(), dir);
  }
  for (auto& prefix : CheckpointsOnDisk(dir)) candidates.push_back(std::move(prefix));
  std::vector<std::string> unique;
  for (auto& candidate : candidates) {
    const bool seen = std::any_of(unique.begin(), unique.end(),
                                  [&](const std::string& u) { return SamePrefix(u, candidate); }) ||
                      std::any_of(rejected.begin(), rejected.end(),
                                  [&](const RejectedCheckpoint& r) { return SamePrefix(r.prefix, candidate); });
    if (seen) continue;
    if (!CheckpointInDirectory(dir, candidate)) {
      const std::string reason = "it is not in " + dir + " (after resolving '..' and symbolic links)";
      Log().warn("Skipping checkpoint {}: {}", candidate, reason);
      rejected.push_back({candidate, reason});
      continue;
    }
    unique.push_back(std::move(candidate));
  }
  return unique;
}

}  // namespace

CheckpointSearch SearchCheckpoints(const std::string& dir) {
  CheckpointSearch search;
  for (const auto& prefix : Candidates(dir, search.rejected)) {
    try {
      CheckpointReader(prefix).verify();
      search.valid = prefix;
      return search;
    } catch (const CheckpointError& error) {
      Log().warn("Skipping checkpoint {}: {}", prefix, error.what());
      search.rejected.push_back({prefix, error.what()});
    }
  }
  return search;
}

std::optional<std::string> LatestValidCheckpoint(const std::string& dir) { return SearchCheckpoints(dir).valid; }

std::string DescribeInvalidCheckpoints(const std::string& dir, const std::vector<RejectedCheckpoint>& rejected) {
  std::string text = "model_dir " + dir + " holds " + std::to_string(rejected.size()) + " checkpoint" +
                     (rejected.size() == 1 ? "" : "s") + " and none is valid:";
  for (size_t i = 0; i < rejected.size(); ++i) {
    text += (i == 0 ? " " : "; ") + rejected[i].prefix + " (" + rejected[i].reason + ")";
  }
  return text;
}

}  // namespace est::checkpoint
