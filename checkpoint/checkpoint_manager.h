#pragma once
/// Saving checkpoints `model.ckpt-<step>` into a model directory with the `checkpoint`
/// state file and retention of tf.train.CheckpointManager, and finding the newest
/// checkpoint that is intact.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/retention.h"

namespace est::checkpoint {

/// Saves checkpoints into one directory, keeps its state file current and deletes the
/// checkpoints that retention drops. One manager per directory; not thread-safe.
class CheckpointManager {
 public:
  /// Creates `dir` (CheckpointError naming it when that fails), removes temporary files
  /// left there by an interrupted save, and picks up the existing state file, whose
  /// checkpoints count toward retention (an unparsable one is logged and ignored; entries
  /// outside `dir`, see CheckpointInDirectory, are logged, ignored and never deleted).
  /// Throws ConfigError for negative retention options.
  explicit CheckpointManager(std::string dir, RetentionOptions retention = {});

  /// Writes `<dir>/model.ckpt-<step>`, then the state file naming it as newest, then
  /// deletes the checkpoints beyond retention; returns the prefix. Saving a step again
  /// replaces that checkpoint. Throws CheckpointError naming the path when a file cannot
  /// be written; earlier checkpoints and the state file then stay as they were.
  std::string save(int64_t step, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                   const std::map<std::string, std::string>& blobs);

  /// The newest checkpoint saved or found in the state file at construction.
  std::optional<std::string> latest_checkpoint() const;
  /// The checkpoints subject to retention, oldest first (preserved ones are not listed).
  std::vector<std::string> checkpoints() const;
  /// The model directory.
  const std::string& directory() const;
  /// The retention options.
  const RetentionOptions& retention() const;

 private:
  void recover_state();

  std::string dir_;
  RetentionOptions retention_;
  std::vector<TrackedCheckpoint> tracked_;
  std::optional<std::string> latest_;
  double last_preserved_timestamp_ = 0;
};

}  // namespace est::checkpoint
