// The chief's checkpoints of a training run, and what they hold beside the model.

#include "estimator/training_checkpoints.h"

#include <cmath>

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_state.h"
#include "common/error.h"
#include "common/logging.h"
#include "estimator/best_checkpoints.h"
#include "estimator/model_checkpoint.h"
#include "estimator/moving_averages.h"

namespace est {
namespace {

// The chooser of RunConfig::keep_best_checkpoints; null when it is unset.
checkpoint::ChooseKeptCheckpoints KeptBestCheckpoints(const Estimator::Impl& estimator) {
  const std::optional<KeepBestCheckpoints>& best = estimator.config.keep_best_checkpoints;
  if (!best) return nullptr;
  return BestCheckpoints(estimator.eval_dir(best->eval_name()), *best);
}

}  // namespace

// The count that blob `name` of `reader` holds as decimal text.
int64_t ParseCountBlob(const std::string& text, const char* name, const checkpoint::CheckpointReader& reader) {
  size_t parsed = 0;
  int64_t count = -1;
  try {
    count = std::stoll(text, &parsed);
  } catch (const std::exception&) {
  }
  EST_CHECK(parsed == text.size() && count >= 0, CheckpointError, "checkpoint ", reader.prefix(), ": blob '", name,
            "' holds '", text, "', expected a non-negative count");
  return count;
}

// Continues `scaler` from the loss scale saved in `reader`, when it has one (a checkpoint
// written without loss scaling starts from the initial scale).
void RestoreLossScale(const checkpoint::CheckpointReader& reader, DynamicLossScaler& scaler) {
  if (!reader.has_tensor(kLossScaleName)) return;
  EST_CHECK(reader.has_tensor(kLossScaleGoodStepsName), CheckpointError, "checkpoint ", reader.prefix(), " has '",
            kLossScaleName, "' but not '", kLossScaleGoodStepsName, "'");
  const at::Tensor scale = reader.tensor(kLossScaleName);
  const at::Tensor good_steps = reader.tensor(kLossScaleGoodStepsName);
  EST_CHECK(scale.numel() == 1 && good_steps.numel() == 1, CheckpointError, "checkpoint ", reader.prefix(), ": '",
            kLossScaleName, "' and '", kLossScaleGoodStepsName, "' must be scalars, got shapes ", scale.sizes(),
            " and ", good_steps.sizes());
  const double scale_value = scale.item<double>();
  const int64_t good_steps_value = good_steps.item<int64_t>();
  EST_CHECK(scale_value > 0 && std::isfinite(scale_value) && good_steps_value >= 0, CheckpointError, "checkpoint ",
            reader.prefix(), " holds loss scale ", scale_value, " and good steps ", good_steps_value,
            "; expected a positive finite scale and a count >= 0");
  scaler.restore(scale_value, good_steps_value);
}

TrainingCheckpoints::TrainingCheckpoints(const Estimator::Impl& estimator, bool complete_saves)
    : model_dir_(estimator.model_dir),
      complete_saves_(complete_saves),
      writer_(checkpoint::CheckpointManager(
          estimator.model_dir, checkpoint::RetentionOptions()
                                   .keep_checkpoint_max(estimator.config.keep_checkpoint_max)
                                   .keep_checkpoint_every_n_hours(estimator.config.keep_checkpoint_every_n_hours)
                                   .also_keep(KeptBestCheckpoints(estimator)))) {}

std::string TrainingCheckpoints::save(const ModelContext& replica, const MovingAverages* averages,
                                      const SavedProgress& progress) {
  CheckpointContents contents = SnapshotModel(replica, progress.global_step);
  if (averages != nullptr) averages->append_to(contents.tensors);
  contents.blobs[kInputPositionBlob] = std::to_string(progress.input_position);
  for (const auto& [worker, position] : progress.worker_input_positions)
    contents.blobs[WorkerInputPositionBlob(worker)] = std::to_string(position);
  if (progress.batch_examples > 0) contents.blobs[kInputBatchExamplesBlob] = std::to_string(progress.batch_examples);
  if (progress.logical_shards > 0) contents.blobs[kLogicalInputShardsBlob] = std::to_string(progress.logical_shards);
  if (const DynamicLossScaler* scaler = progress.loss_scaler) {
    contents.tensors.emplace_back(kLossScaleName, at::scalar_tensor(scaler->scale(), at::kDouble));
    contents.tensors.emplace_back(kLossScaleGoodStepsName, at::scalar_tensor(scaler->good_steps(), at::kLong));
  }
  Log().info("Saving checkpoints for {} into {}/model.ckpt.", progress.global_step, model_dir_);
  std::string prefix = writer_.save(progress.global_step, contents.tensors, std::move(contents.blobs));
  if (complete_saves_) writer_.wait();
  last_saved_step_ = progress.global_step;
  return prefix;
}

std::optional<distribute::TrainingProgress> TrainingCheckpoints::restore_latest(ModelContext& replica,
                                                                                int num_workers) {
  writer_.wait();
  const std::optional<std::string> latest = checkpoint::LatestCheckpoint(model_dir_);
  if (!latest) return std::nullopt;
  auto reader = std::make_shared<const checkpoint::CheckpointReader>(*latest);
  Log().info("Restoring parameters from {}", *latest);
  const ModelContext::Initializers restore = RestoreFromCheckpoint(reader, RestoreMode::kTraining);
  restore.variables(replica.variables());
  for (const auto& [name, optimizer] : replica.optimizers()) restore.optimizer(name, *optimizer);
  distribute::TrainingProgress progress;
  progress.global_step = reader->global_step();
  for (int worker = 0; worker < num_workers; ++worker) {
    const std::string blob = WorkerInputPositionBlob(worker);
    if (std::optional<std::string> position = reader->blob(blob))
      progress.input_positions[worker] = ParseCountBlob(*position, blob.c_str(), *reader);
  }
  return progress;
}

}  // namespace est
