#pragma once
/// Moves a ModelContext's state into and out of checkpoints: variables with shape
/// checks, optimizer state as opaque blobs, the global step. Internal to the estimator.

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "estimator/model_context.h"
#include "estimator/warm_start_settings.h"

namespace est {
namespace checkpoint {
class CheckpointReader;
}

/// What the estimator writes into one checkpoint.
struct CheckpointContents {
  NamedTensors tensors;
  std::map<std::string, std::string> blobs;
};

/// Blob key of the training input position (batches consumed, as decimal text).
inline constexpr const char* kInputPositionBlob = "input_position";
/// Blob key of worker `worker`'s own input position, where workers consume their input at
/// their own pace (parameter servers): "input_position/worker_<worker>".
std::string WorkerInputPositionBlob(int worker);
/// Blob key of the number of logical input shards the training read (decimal text); where
/// it is present, the input position is each shard's.
inline constexpr const char* kLogicalInputShardsBlob = "input_logical_shards";
/// Blob key of the examples per batch of the run that wrote the checkpoint (decimal text).
inline constexpr const char* kInputBatchExamplesBlob = "input_batch_examples";

/// The variables, the global step and every optimizer's state of `ctx`.
CheckpointContents SnapshotModel(const ModelContext& ctx, int64_t global_step);

/// What RestoreFromCheckpoint gives the state model_fn creates.
enum class RestoreMode {
  kVariables,       ///< the variables only: evaluation and prediction (warm-starting: WarmStartFromCheckpoint)
  kTraining,        ///< the variables and every optimizer's state: resuming training
  kMovingAverages,  ///< each variable's moving average where the checkpoint has one, else the
                    ///< variable: evaluation and prediction with RunConfig::moving_average
};

/// Initializers that fill new variables (and optimizers, as `mode` says) from `reader`. A
/// variable absent from the checkpoint or of another shape or dtype is a CheckpointError
/// naming the variable, the checkpoint and both shapes.
ModelContext::Initializers RestoreFromCheckpoint(std::shared_ptr<const checkpoint::CheckpointReader> reader,
                                                 RestoreMode mode);

/// Initializers that warm-start new state from `reader` as `settings` say: the variables
/// vars_to_warm_start matches (trainable ones, and buffers when asked), each under its
/// previous name where var_name_to_prev_var_name gives one, and the optimizers' state when
/// asked. A variable to warm-start that the checkpoint lacks, or holds with another shape or
/// dtype, is a CheckpointError naming both names.
ModelContext::Initializers WarmStartFromCheckpoint(std::shared_ptr<const checkpoint::CheckpointReader> reader,
                                                   const WarmStartSettings& settings);

/// Serializes an optimizer's state (LibTorch's archive format) into bytes.
std::string SerializeOptimizer(const torch::optim::Optimizer& optimizer);
/// Loads bytes from SerializeOptimizer into `optimizer`; CheckpointError naming `name` on failure.
void DeserializeOptimizer(const std::string& bytes, const std::string& name, torch::optim::Optimizer& optimizer);

}  // namespace est
