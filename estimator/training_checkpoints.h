#pragma once
/// TrainingCheckpoints: the chief's checkpoints of a training run, and what they hold beside
/// the model (the input's position, the loss scale). Internal to the estimator.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "checkpoint/async_checkpoint_writer.h"
#include "distribute/step_sync.h"
#include "estimator/estimator_impl.h"
#include "estimator/loss_scaler.h"

namespace est {

namespace checkpoint {
class CheckpointReader;
}  // namespace checkpoint

class ModelContext;
class MovingAverages;

/// The count that blob `name` of `reader` holds as decimal text; CheckpointError otherwise.
int64_t ParseCountBlob(const std::string& text, const char* name, const checkpoint::CheckpointReader& reader);

/// Continues `scaler` from the loss scale saved in `reader`, when it has one (a checkpoint
/// written without loss scaling starts from the initial scale); CheckpointError for a
/// malformed one.
void RestoreLossScale(const checkpoint::CheckpointReader& reader, DynamicLossScaler& scaler);

/// The training's progress a checkpoint records beside the model.
struct SavedProgress {
  int64_t global_step = 0;
  /// Batches consumed by every pipeline or logical shard read (the chief's).
  int64_t input_position = 0;
  /// Each worker's own position, where workers read at their own pace (parameter servers).
  std::map<int, int64_t> worker_input_positions;
  /// Examples per batch of this run, 0 before its first batch.
  int64_t batch_examples = 0;
  /// The logical input shards, 0 where each worker reads one pipeline.
  int logical_shards = 0;
  /// With loss scaling: its scale and good steps.
  const DynamicLossScaler* loss_scaler = nullptr;
};

/// The chief writes checkpoints asynchronously: save() copies the variables and returns while
/// a background thread writes the files. With `complete_saves` (the run has
/// CheckpointSaverListeners, whose after_save may read the checkpoint, as train_and_evaluate's
/// evaluation does) it also waits for the files before returning. A background failure is
/// rethrown by check() or the next save; wait() waits for the last save.
class TrainingCheckpoints {
 public:
  /// Checkpoints in `estimator`'s model_dir, kept as its RunConfig says (keep_checkpoint_max,
  /// keep_checkpoint_every_n_hours, keep_best_checkpoints).
  TrainingCheckpoints(const Estimator::Impl& estimator, bool complete_saves);

  /// Saves `replica`'s variables and optimizers, the moving `averages` (when given) and
  /// `progress`; returns the checkpoint's prefix.
  std::string save(const ModelContext& replica, const MovingAverages* averages, const SavedProgress& progress);
  /// Rethrows a failure of the background writer.
  void check() { writer_.check(); }
  /// Returns once every checkpoint saved is written.
  void wait() { writer_.wait(); }
  /// The global step of the last checkpoint saved; nullopt before the first save.
  std::optional<int64_t> last_saved_step() const { return last_saved_step_; }
  /// Loads the latest checkpoint of model_dir into `replica` (variables and optimizers) and
  /// returns its progress, with the input positions of workers [0, num_workers); nullopt when
  /// there is none. For a VariableStore whose state was lost.
  std::optional<distribute::TrainingProgress> restore_latest(ModelContext& replica, int num_workers);

 private:
  std::string model_dir_;
  bool complete_saves_;
  checkpoint::AsyncCheckpointWriter writer_;
  std::optional<int64_t> last_saved_step_;
};

}  // namespace est
