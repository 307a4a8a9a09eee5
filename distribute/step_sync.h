#pragma once
/// StepSync: how one training step synchronizes, owned by the strategy. The training loop
/// runs forward and backward on each local replica and hands each replica's gradients,
/// loss and summaries here; the strategy's StepSync makes them what every replica applies
/// (gradients averaged over every replica in sync and over the micro-batches), agrees the
/// loss, the summaries and the stop flags across workers, and owns the "any worker"
/// decisions and the barrier. The loop knows no buckets, flag encodings or collectives; a
/// strategy whose step is not an all-reduce implements this interface (as DDP's Reducer
/// and Flashlight's add/finalize Reducer are the models).

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace torch::optim {
class Optimizer;
}

namespace est::distribute {

class Strategy;

/// Variables with their checkpoint keys, in creation order.
using NamedVariables = std::vector<std::pair<std::string, at::Tensor>>;

/// What one local replica brings to a step: its trainable variables (its gradients summed
/// over the step's micro-batches in `.grad()`), its loss and its summaries (means over the
/// micro-batches, in an order every replica shares).
struct ReplicaStep {
  std::vector<at::Tensor> variables;
  at::Tensor loss;
  std::vector<at::Tensor> summaries;
  /// The optimizer model_fn returned for this step, which updates `variables`.
  torch::optim::Optimizer* optimizer = nullptr;
  /// Set by the training loop where it can update variables before others (replica 0 of a
  /// worker that steps its own optimizer): StepSync::finish may call it, on the loop's
  /// thread, with variables whose gradients are final, each at most once a step, while the
  /// rest are still being reduced. Those it named are updated now, the rest in apply().
  std::function<void(const std::vector<at::Tensor>& variables)> gradients_final;
};

/// What a worker knows before a step synchronizes, and what every worker learns from it.
struct StepFlags {
  /// The input ends before the next step.
  bool input_ended = false;
  /// A stop signal (SIGTERM, SIGINT, SIGHUP) arrived.
  bool stop_signal = false;
  /// The job's training ended elsewhere (the chief finished it); set by StepSync::apply.
  bool job_finished = false;
};

/// The progress a checkpoint records when it is not this worker's own: the global step and
/// each worker's input position (batches consumed), by worker index.
struct TrainingProgress {
  int64_t global_step = 0;
  std::map<int, int64_t> input_positions;
};

/// How a training run's steps are shaped, and what the training loop offers its StepSync.
struct StepSyncOptions {
  /// Micro-batches whose gradients each replica sums per step (gradient accumulation).
  int64_t micro_batches = 1;
  /// Whether optimizers step in the kernels' fused pass where it applies
  /// (RunConfig::fused_optimizer_step); a StepSync that steps them elsewhere (ps tasks) says so there.
  bool fused_optimizer_step = true;
  /// On the chief: loads the latest checkpoint of model_dir into replica 0's variables and
  /// optimizers and returns its progress; nullopt when there is none. A StepSync whose
  /// state lives elsewhere restores it from there when it was lost (a ps task restarted).
  std::function<std::optional<TrainingProgress>()> restore_latest_checkpoint;
};

/// One per training run, made by Strategy::make_step_sync. Every worker calls its methods
/// in the same order.
class StepSync {
 public:
  virtual ~StepSync() = default;

  /// Whether replica 0's loss handed to before_last_backward() is already the step's loss,
  /// so that the loop may start copying it to the host while backward runs; otherwise the
  /// loss is known after finish().
  virtual bool loss_known_before_backward() const { return false; }
  /// Whether finish() gives every variable of every replica a gradient, a variable that
  /// backward left without one counting as zero: then the loop may clear gradients before
  /// backward (leave them undefined) instead of zeroing them, with the same results.
  virtual bool defines_every_gradient() const { return false; }
  /// Called for each local replica right before the backward of its last micro-batch, with
  /// its variables, loss and summaries: a StepSync that reduces while backward runs
  /// prepares here. `local` are this worker's flags.
  virtual void before_last_backward(int replica, const ReplicaStep& step, StepFlags local) = 0;
  /// After every local replica's backward: makes every replica's gradients (in `.grad()`)
  /// those to apply, sets `replicas[0]`'s loss and summaries to their means over every
  /// replica in sync, and returns what any worker's flags said.
  virtual StepFlags finish(std::vector<ReplicaStep>& replicas, StepFlags local) = 0;
  /// Called when replica 0's model_fn creates variables (a module's parameters and buffers,
  /// or a buffer), before they are used: makes them the training's current values. The
  /// all-reduce StepSyncs take the chief's (a broadcast); parameter servers pull theirs.
  virtual void initialize_variables(const NamedVariables& variables) = 0;
  /// After finish(): applies the step's update and returns the global step after it.
  /// `finite` is false when the gradients are not finite (loss scaling): nothing is applied.
  /// `step_optimizers` steps every local replica's optimizer, which is how the all-reduce
  /// StepSyncs apply; a StepSync that updates the variables elsewhere applies there, brings
  /// the new values into every local replica, and may set `flags.job_finished`.
  /// `input_position`: this worker's batches consumed after the step.
  virtual int64_t apply(std::vector<ReplicaStep>& replicas, bool finite, int64_t global_step, int64_t input_position,
                        const std::function<void()>& step_optimizers, StepFlags& flags) {
    if (finite) step_optimizers();
    return global_step + 1;
  }
  /// On the chief, before it saves a checkpoint: when replica 0's state is not the
  /// training's own (it lives on ps tasks), makes replica 0's variables and optimizer state
  /// the current ones and returns the progress they belong to; nullopt when replica 0
  /// holds the training's state already.
  virtual std::optional<TrainingProgress> before_save() { return std::nullopt; }
  /// Where this worker's input continues (batches to skip), when the StepSync knows it
  /// better than the checkpoint the run restored; nullopt otherwise. Called once, before
  /// the first step.
  virtual std::optional<int64_t> resume_position() { return std::nullopt; }
  /// True on every worker when `flag` is true on any worker.
  virtual bool any_worker(bool flag) = 0;
  /// Returns once every worker has called barrier().
  virtual void barrier() = 0;
};

/// The StepSync every strategy gets unless it makes its own: with one replica in sync,
/// nothing crosses a replica; with one local replica per worker and a collective, gradients
/// are all-reduced in buckets while backward runs (GradientReducer), the loss and the flags
/// riding in the last bucket; otherwise one flat average over every replica after backward.
std::unique_ptr<StepSync> CreateAllReduceStepSync(Strategy& strategy, const StepSyncOptions& options);

}  // namespace est::distribute
