#pragma once
/// VariableShards: what a ps task holds — its shards of the job's variables on the CPU, each
/// with the optimizer that updates it, the global step and each worker's input position —
/// and how pushes update them under the job's UpdateRule (async, bounded staleness, sync).
/// The variable service's state, without its transport. Internal to the parameter servers.

#include <ATen/core/Tensor.h>
#include <torch/optim/optimizer.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "distribute/parameter_server/optimizer_agreement.h"
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
  /// SYNC: the global step of the values the gradients were computed on.
  int64_t step = 0;
  /// The global step the worker's model_fn saw when it set the optimizer options.
  int64_t options_step = 0;
  /// SYNC: how the step's mean is clipped (the last push's clipping applies).
  ps::Clipping clipping;
  /// SYNC, clipping by global norm: this task holds every shard (its norm is the global one).
  bool holds_every_shard = false;
};

/// What a push did.
struct PushOutcome {
  /// The global step after it.
  int64_t global_step = 0;
  /// SYNC: it came for a step already applied and was dropped.
  bool dropped = false;
  /// SYNC: the chief finished the job while the push waited for its step; nothing was applied.
  bool job_finished = false;
  /// Nothing was applied: the push's optimizer options differ from another worker's at the
  /// same step (the error text says how).
  bool optimizers_differ = false;
  /// SYNC, clipping by global norm: this task's part of the norm of the push's step (or,
  /// dropped, of the step it gathers), and whether that step awaits finish_round().
  std::optional<ps::RoundNorm> round_norm;
};

/// What a pull returns besides the tensors.
struct PullHeader {
  int64_t global_step = 0;
  std::map<uint32_t, int64_t> input_positions;
};

/// Sees one tensor of a pull (shard id, slot "" for the value, the tensor itself) while its
/// shard's lock is held. It may keep a reference to a value's storage (not to the tensor):
/// an update that comes while anybody else holds that storage goes to fresh memory (copy on
/// write). It must copy the optimizer slots it keeps, which updates change in place.
using TensorVisitor = std::function<void(uint32_t shard, const std::string& slot, const at::Tensor& tensor)>;

/// When a call that waits gives up: its deadline, or its caller went away.
struct CallLimit {
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  std::function<bool()> cancelled = [] { return false; };
};

/// A ps task's variables. Thread-safe: pushes to different shards apply in parallel, each
/// shard's update is atomic.
class VariableShards {
 public:
  /// `task`: this ps task's index; the global step counts on task 0 (every task counts, task
  /// 0's is the job's). A shard's optimizer steps fused where the chief's update rule says so
  /// (UpdateRule.fused_optimizer_step, RunConfig::fused_optimizer_step on the chief).
  explicit VariableShards(int task) : task_(task) {}

  /// True once initialize() succeeded.
  bool initialized() const;
  /// The plan's fingerprint (0 before initialize()).
  uint64_t plan() const;
  /// The global step.
  int64_t global_step() const;
  /// Each worker's input position as its last push left it.
  std::map<uint32_t, int64_t> input_positions() const;
  /// The plan's variables (empty before initialize()).
  std::vector<ps::VariableSpec> variables() const;
  /// The job's update rule (ASYNC before initialize()).
  ps::UpdateRule rule() const;
  /// BOUNDED: the most pushes a puller was ahead of the slowest live worker when its pull
  /// returned.
  int64_t max_staleness() const;
  /// SYNC: pushes dropped because their step was already applied.
  int64_t dropped_pushes() const;

  /// Takes the shards of `specs` with their values (slot "") and optimizer slots from
  /// `tensors`, the global step, the input positions, the plan's variables and the update
  /// rule. Sets `initialized_now` false, changing nothing, when the task holds the same plan
  /// already, unless `replace`. Returns an error text (changing nothing) when a value is missing or of another
  /// shape or dtype than its spec, or the task holds another plan; "" on success.
  std::string initialize(uint64_t plan, const std::vector<ps::ShardSpec>& specs,
                         std::map<TensorKey, at::Tensor> tensors, int64_t global_step,
                         const std::map<uint32_t, int64_t>& input_positions,
                         std::vector<ps::VariableSpec> variables, const ps::UpdateRule& rule, bool replace,
                         bool& initialized_now);

  /// Applies `push` under the rule: at once (ASYNC, BOUNDED), or (SYNC) added to its step's
  /// sum, waiting until the step is applied, or, clipping by global norm over several tasks,
  /// until its pushes are gathered (outcome.round_norm: awaiting finish_round()). Returns an error text for an unknown shard, a
  /// gradient of another shape, optimizer options that differ from another worker's at the
  /// same step (outcome.optimizers_differ), or a wait cut off by `limit`, before anything of
  /// it is applied; "" on success.
  std::string apply(const ShardPush& push, const CallLimit& limit, PushOutcome& outcome);

  /// SYNC, clipping by global norm: applies step `step`, whose pushes are gathered and which
  /// awaits its global norm, clipped with `global_norm` (the square root of every task's
  /// RoundNorm::norm_squared summed); does nothing when the task does not await that step
  /// (another worker finished it, or the chief replaced what the task holds). Returns the
  /// global step after it, or an error text (before initialize()) and -1.
  int64_t finish_round(int64_t step, double global_norm, std::string& error);

  /// Hands `visit` every shard's value, each under its shard's lock; `with_state`: also
  /// their optimizer slots, all at one version (no update applies meanwhile). BOUNDED: first
  /// waits while `worker` is more than the staleness ahead of the slowest live worker (until
  /// `limit`).
  PullHeader pull(uint32_t worker, bool with_state, const CallLimit& limit, const TensorVisitor& visit);

  /// Worker `worker` stops training: waits no longer count it.
  void leave(uint32_t worker);
  /// The chief finished the job: waits for other workers (sync steps, bounded pulls) end.
  void finish_job();

 private:
  struct Shard {
    ps::ShardSpec spec;
    at::Tensor value;
    std::unique_ptr<torch::optim::Optimizer> optimizer;
    mutable std::mutex mutex;
  };
  struct Worker {
    int64_t pushes = 0;
    std::chrono::steady_clock::time_point last_seen;
    bool left = false;
    bool excluded = false;  ///< warned of as not live
  };

  /// Steps `shard`'s optimizer with `gradient` (options from `optimizer` when given), fused
  /// where `fuse` (the rule's fused_optimizer_step); into a copy of the value when a pull still
  /// holds its storage.
  void step_shard(Shard& shard, const at::Tensor& gradient, const ps::OptimizerConfig* optimizer, bool fuse) const;
  /// Marks `worker` as heard from now; one not heard of before (a worker beyond the rule's
  /// num_workers, started while the job runs) starts at the slowest live worker's pushes.
  /// Needs mutex_.
  void seen(uint32_t worker);
  /// Whether `worker` counts in waits for the slowest; warns once of one that stopped
  /// counting. Needs mutex_.
  bool live(uint32_t worker, Worker& state);
  /// The fewest pushes of a live worker. Needs mutex_.
  int64_t slowest_pushes();
  /// SYNC: how many pushes apply a step now: replicas_to_aggregate, fewer when fewer workers
  /// are live. Needs mutex_.
  int required_pushes();
  /// SYNC: makes the step's sums their mean, clipped by value, and adds up this task's part of
  /// the squared global norm when the step clips by it. Needs mutex_.
  void gather_round();
  /// SYNC: applies the gathered step's gradients scaled by `scale` and opens the next step.
  /// Needs mutex_.
  void apply_round(double scale);
  /// SYNC: what this task knows of the norm of step `step`: its gathered one (awaiting), or
  /// the one it applied last; else the step it awaits a norm for, if any. Needs mutex_.
  std::optional<ps::RoundNorm> round_norm(int64_t step) const;

  const int task_;
  /// Held shared by each update, exclusively by a pull with state: that pull sees no update
  /// half applied.
  mutable std::shared_mutex version_mutex_;
  mutable std::mutex mutex_;  ///< guards everything but the shards' values and optimizers
  std::condition_variable progress_;  ///< a push arrived, a step was applied, a worker left
  bool initialized_ = false;
  uint64_t plan_ = 0;
  ps::UpdateRule rule_;
  int64_t global_step_ = 0;
  int64_t max_staleness_ = 0;
  int64_t dropped_pushes_ = 0;
  std::map<uint32_t, uint64_t> last_sequence_;
  std::map<uint32_t, int64_t> input_positions_;
  OptimizerAgreement optimizer_agreement_;  ///< the options pushed for recent steps
  std::map<uint32_t, Worker> workers_;
  std::map<uint32_t, std::unique_ptr<Shard>> shards_;
  std::vector<ps::VariableSpec> variables_;
  // SYNC: the sums of the current step's gradients, their count, and the last pushes' options
  // and clipping.
  std::map<uint32_t, at::Tensor> round_sums_;
  std::map<uint32_t, ps::OptimizerConfig> round_optimizers_;
  int round_pushes_ = 0;
  ps::Clipping round_clipping_;
  bool round_holds_every_shard_ = false;
  /// The step's pushes are in and their mean is made: it awaits its global norm.
  bool round_gathered_ = false;
  double round_norm_squared_ = 0;  ///< this task's part of the gathered step's squared norm
  /// The norm of the step applied last (global_step_ - 1), where it clipped by global norm.
  std::optional<ps::RoundNorm> last_round_norm_;
  uint64_t generation_ = 0;  ///< counts initializations: a replace ends the steps waited for
  bool job_finished_ = false;  ///< the chief finished the job: nothing waits any more
};

}  // namespace est::distribute
