#pragma once
/// VariableShards: what a ps task holds — its shards of the job's variables on the CPU, each
/// with the optimizer that updates it, the global step and each worker's input position —
/// and the updates applied to them. The variable service's state, without its transport.
/// Internal to the parameter servers.

#include <ATen/core/Tensor.h>
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "distribute/parameter_server/tensor_chunks.h"
#include "distribute/parameter_server/variable_service.pb.h"

namespace est::distribute {

/// One worker's push: its gradients by shard id and the optimizer options to apply them with.
struct ShardPush {
  uint32_t worker = 0;
  /// Increases with each push of the worker; a push already applied (a retry) is skipped.
  uint64_t sequence = 0;
  std::map<uint32_t, ps::OptimizerConfig> optimizers;
  std::map<uint32_t, at::Tensor> gradients;
  /// The worker's input position after the step.
  int64_t input_position = 0;
};

/// What a pull returns.
struct ShardValues {
  int64_t global_step = 0;
  std::vector<TensorToSend> tensors;
  std::map<uint32_t, int64_t> input_positions;
};

/// A ps task's variables. Thread-safe: pushes to different shards apply in parallel, each
/// shard's update is atomic.
class VariableShards {
 public:
  /// `task`: this ps task's index; the global step advances on task 0 only.
  explicit VariableShards(int task) : task_(task) {}

  /// True once initialize() succeeded.
  bool initialized() const;
  /// The plan's fingerprint (0 before initialize()).
  uint64_t plan() const;
  /// The global step.
  int64_t global_step() const;

  /// Takes the shards of `specs` with their values (slot "") and optimizer slots from
  /// `tensors`, the global step and the input positions. Returns false, changing nothing,
  /// when the task is initialized already with the same plan. Returns an error text (and
  /// changes nothing) when a value is missing or of another shape or dtype than its spec,
  /// or the task holds another plan; "" on success.
  std::string initialize(uint64_t plan, const std::vector<ps::ShardSpec>& specs,
                         std::map<TensorKey, at::Tensor> tensors, int64_t global_step,
                         const std::map<uint32_t, int64_t>& input_positions, bool& initialized_now);

  /// Applies `push`: each gradient with its shard's optimizer (options from the push), and
  /// advances the global step (on task 0). Returns an error text for an unknown shard or a
  /// gradient of another shape, before anything is applied; "" on success. `global_step`
  /// receives the step after the push.
  std::string apply(const ShardPush& push, int64_t& global_step);

  /// Copies of every shard's value; `with_state`: also their optimizer slots, all at one
  /// version (no update applies while they are copied).
  ShardValues pull(bool with_state) const;

 private:
  struct Shard {
    ps::ShardSpec spec;
    at::Tensor value;
    std::unique_ptr<torch::optim::Optimizer> optimizer;
    mutable std::mutex mutex;
  };

  const int task_;
  /// Held shared by each update, exclusively by a pull with state: that pull sees no update
  /// half applied.
  mutable std::shared_mutex version_mutex_;
  mutable std::mutex mutex_;  ///< guards everything but the shards' values and optimizers
  bool initialized_ = false;
  uint64_t plan_ = 0;
  int64_t global_step_ = 0;
  std::map<uint32_t, uint64_t> last_sequence_;
  std::map<uint32_t, int64_t> input_positions_;
  std::map<uint32_t, std::unique_ptr<Shard>> shards_;
};

}  // namespace est::distribute
