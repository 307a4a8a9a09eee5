#pragma once
/// The newest checkpoint of a directory that opens and verifies, and the newer ones that do
/// not, with why.

#include <optional>
#include <string>
#include <vector>

namespace est::checkpoint {

/// A checkpoint of a directory that cannot be used, and why ("the data file is truncated …").
struct RejectedCheckpoint {
  std::string prefix;
  std::string reason;
};

/// What a search of a directory for its newest valid checkpoint found.
struct CheckpointSearch {
  /// The newest checkpoint that opens and verifies; nullopt when none does.
  std::optional<std::string> valid;
  /// The candidates tried before it (all of them when none is valid), most preferred first.
  std::vector<RejectedCheckpoint> rejected;
};

/// Searches `dir`: the state file's newest checkpoint, then the rest of its list newest
/// first, then any `model.ckpt-<step>.index` in `dir` by descending step. Each candidate that
/// fails to verify, or lies outside `dir` (CheckpointInDirectory), is rejected with its
/// reason, and logged as a warning naming it. A `dir` that does not exist holds nothing.
CheckpointSearch SearchCheckpoints(const std::string& dir);

/// SearchCheckpoints(dir).valid.
std::optional<std::string> LatestValidCheckpoint(const std::string& dir);

/// "model_dir /m holds 2 checkpoints and none is valid: /m/model.ckpt-20 (why); /m/model.ckpt-10 (why)".
std::string DescribeInvalidCheckpoints(const std::string& dir, const std::vector<RejectedCheckpoint>& rejected);

}  // namespace est::checkpoint
