#pragma once
/// Which checkpoints to keep, with the semantics of TensorFlow's tf.train.Saver and
/// tf.train.CheckpointManager (max_to_keep, keep_checkpoint_every_n_hours).

#include <torch/arg.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace est::checkpoint {

/// Chooses, among the checkpoints retention tracks (prefixes, oldest first), those to keep
/// beside the newest keep_checkpoint_max (the best by an evaluation metric).
using ChooseKeptCheckpoints = std::function<std::set<std::string>(const std::vector<std::string>& tracked)>;

/// How many checkpoints a CheckpointManager keeps.
struct RetentionOptions {
  /// Keep the newest this many checkpoints; 0 keeps every checkpoint.
  TORCH_ARG(int, keep_checkpoint_max) = 5;
  /// A checkpoint about to be deleted is kept forever instead when it was saved at least
  /// this many hours after the last one kept this way; 0 disables this.
  TORCH_ARG(double, keep_checkpoint_every_n_hours) = 10000;
  /// When set, the checkpoints it chooses are kept too, however old: they stay tracked (and
  /// listed in the state file), and are deleted once it no longer chooses them.
  TORCH_ARG(ChooseKeptCheckpoints, also_keep);
};

/// A checkpoint subject to retention and when it was saved (seconds since the epoch).
struct TrackedCheckpoint {
  /// The checkpoint prefix.
  std::string prefix;
  /// Seconds since the epoch at which it was saved.
  double timestamp = 0;
};

/// What ApplyRetention decided.
struct RetentionOutcome {
  /// Checkpoints still subject to retention, oldest first.
  std::vector<TrackedCheckpoint> tracked;
  /// Checkpoints whose files are to be deleted, oldest first.
  std::vector<std::string> deleted;
  /// Checkpoints kept forever by keep_checkpoint_every_n_hours; no longer tracked.
  std::vector<std::string> preserved;
  /// The timestamp of the newest checkpoint preserved so far.
  double last_preserved_timestamp = 0;
};

/// Drops the oldest of `tracked` (oldest first) until keep_checkpoint_max remain, apart from
/// those `also_keep` chooses, which stay tracked; each dropped checkpoint saved at least
/// keep_checkpoint_every_n_hours after `last_preserved_timestamp` is preserved (and becomes
/// the last preserved), the others are deleted.
RetentionOutcome ApplyRetention(const std::vector<TrackedCheckpoint>& tracked,
                                double last_preserved_timestamp, const RetentionOptions& options);

}  // namespace est::checkpoint
