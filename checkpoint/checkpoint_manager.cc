#include "checkpoint/checkpoint_manager.h"

#include <algorithm>
#include <chrono>

#include "checkpoint/checkpoint_files.h"
#include "checkpoint/checkpoint_state.h"
#include "checkpoint/checkpoint_writer.h"
#include "common/crash_point.h"
#include "common/error.h"
#include "common/file_util.h"
#include "common/logging.h"

namespace est::checkpoint {
namespace {

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void CreateModelDirectory(const std::string& dir) {
  try {
    CreateDirectories(dir);
  } catch (const IoError& error) {
    EST_THROW(CheckpointError, "cannot use model directory '", dir, "': ", error.what());
  }
}

}  // namespace

CheckpointManager::CheckpointManager(std::string dir, RetentionOptions retention)
    : dir_(std::move(dir)), retention_(retention) {
  EST_CHECK(retention_.keep_checkpoint_max() >= 0, ConfigError,
            "keep_checkpoint_max must be 0 (keep all) or positive, got ",
            retention_.keep_checkpoint_max());
  EST_CHECK(retention_.keep_checkpoint_every_n_hours() >= 0, ConfigError,
            "keep_checkpoint_every_n_hours must be 0 (never) or positive, got ",
            retention_.keep_checkpoint_every_n_hours());
  CreateModelDirectory(dir_);
  const int removed = RemoveTemporaryFiles(dir_, IsCheckpointFileName);
  if (removed > 0)
    Log().info("Removed {} temporary files left in {} by an interrupted save", removed, dir_);
  recover_state();
}

void CheckpointManager::recover_state() {
  const double now = NowSeconds();
  std::optional<CheckpointState> state;
  try {
    state = ReadCheckpointState(dir_);
  } catch (const CheckpointError& error) {
    Log().warn("{}; the checkpoints it lists are no longer managed", error.what());
  }
  if (!state) {
    // Slightly in the past, so that a manager re-created at once behaves the same.
    last_preserved_timestamp_ = now - 1;
    return;
  }
  if (CheckpointInDirectory(dir_, state->model_checkpoint_path)) latest_ = state->model_checkpoint_path;
  if (state->last_preserved_timestamp > now) {
    Log().error(
        "{} was written in the future (last_preserved_timestamp {} > now {}); the clock went back",
        dir_, state->last_preserved_timestamp, now);
  }
  last_preserved_timestamp_ = std::min(state->last_preserved_timestamp, now);
  const auto& paths = state->all_model_checkpoint_paths;
  const auto& timestamps = state->all_model_checkpoint_timestamps;
  const bool has_timestamps = timestamps.size() == paths.size();
  for (size_t i = 0; i < paths.size(); ++i) {
    if (!CheckpointInDirectory(dir_, paths[i])) {
      Log().warn("Ignoring checkpoint {} listed in {}'s state file: it is not in that directory, so it is neither "
                 "managed nor ever deleted",
                 paths[i], dir_);
      continue;
    }
    tracked_.push_back(
        {paths[i], has_timestamps ? std::min(timestamps[i], now) : last_preserved_timestamp_});
  }
}

std::string CheckpointManager::save(int64_t step,
                                    const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                                    const std::map<std::string, std::string>& blobs) {
  const std::string prefix = CheckpointPrefix(dir_, step);
  CreateModelDirectory(dir_);
  WriteCheckpoint(prefix, tensors, blobs, step);
  CrashPoint("checkpoint_state", step);  // complete files, not yet in the state file

  std::vector<TrackedCheckpoint> tracked;
  for (const auto& checkpoint : tracked_) {
    if (!SamePrefix(checkpoint.prefix, prefix)) tracked.push_back(checkpoint);
  }
  tracked.push_back({prefix, NowSeconds()});
  RetentionOutcome outcome = ApplyRetention(tracked, last_preserved_timestamp_, retention_);

  CheckpointState state;
  state.model_checkpoint_path = prefix;
  for (const auto& checkpoint : outcome.tracked) {
    state.all_model_checkpoint_paths.push_back(checkpoint.prefix);
    state.all_model_checkpoint_timestamps.push_back(checkpoint.timestamp);
  }
  state.last_preserved_timestamp = outcome.last_preserved_timestamp;
  WriteCheckpointState(dir_, state);

  tracked_ = std::move(outcome.tracked);
  latest_ = prefix;
  last_preserved_timestamp_ = outcome.last_preserved_timestamp;
  CrashPoint("checkpoint_retention", step);  // in the state file, old ones not yet deleted
  for (const auto& deleted : outcome.deleted) {
    if (!RemoveCheckpointFiles(deleted)) Log().warn("Could not delete old checkpoint {}", deleted);
  }
  return prefix;
}

std::optional<std::string> CheckpointManager::latest_checkpoint() const { return latest_; }

std::vector<std::string> CheckpointManager::checkpoints() const {
  std::vector<std::string> prefixes;
  for (const auto& checkpoint : tracked_) prefixes.push_back(checkpoint.prefix);
  return prefixes;
}

const std::string& CheckpointManager::directory() const { return dir_; }

const RetentionOptions& CheckpointManager::retention() const { return retention_; }

}  // namespace est::checkpoint
