#pragma once
/// The step seam between the training loop and a strategy, in two parts made together for
/// one training run (TrainingSync):
/// - StepSync: what a step synchronizes. The loop runs forward and backward on each local
///   replica and hands each replica's gradients, loss and summaries here; StepSync makes them
///   the gradients every replica applies, agrees the loss, the summaries and the stop flags
///   across workers, and owns the "any worker" decisions and the barrier (as DDP's Reducer
///   and Flashlight's add/finalize Reducer).
/// - VariableStore: where the variables live (this process's replicas, or ps tasks): how new
///   variables take the training's values, how a step's update is applied and the replicas'
///   buffers kept equal, and what a checkpoint records.
/// The loop knows no buckets, flag encodings, collectives or ps tasks.

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
struct GradientReducerOptions;

/// Variables with their checkpoint keys, in creation order.
using NamedVariables = std::vector<std::pair<std::string, at::Tensor>>;

/// What one local replica brings to a step: its trainable variables (its gradients summed
/// over the step's micro-batches in `.grad()`), its loss and its summaries (means over the
/// micro-batches, in an order every replica shares).
struct ReplicaStep {
  std::vector<at::Tensor> variables;
  /// Its buffers (state training changes without gradients: BatchNorm's running statistics),
  /// in an order every replica shares.
  std::vector<at::Tensor> buffers;
  at::Tensor loss;
  std::vector<at::Tensor> summaries;
  /// The optimizers model_fn returned for this step, which update `variables` (each variable
  /// belongs to one).
  std::vector<torch::optim::Optimizer*> optimizers;
  /// Set by the training loop where it can update variables before others (without loss
  /// scaling, which must see every gradient first): StepSync::finish may call it, on the
  /// loop's thread, with variables whose gradients are final, each at most once a step, while
  /// the rest are still being reduced. Those it named are updated now, the rest in apply().
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
  /// A hook of this worker asked to stop (RunContext::request_stop).
  bool stop_requested = false;
  /// A worker waits to join the training group (the chief saw it): every worker admits it
  /// after this step (ElasticGroup::reform with Change::kNewcomers).
  bool newcomer_waiting = false;
};

/// The progress a checkpoint records when it is not this worker's own: the global step and
/// each worker's input position (batches consumed), by worker index.
struct TrainingProgress {
  int64_t global_step = 0;
  std::map<int, int64_t> input_positions;
};

/// How a training run's steps are shaped, and what the training loop offers its TrainingSync.
struct StepSyncOptions {
  /// Micro-batches whose gradients each replica sums per step (gradient accumulation).
  int64_t micro_batches = 1;
  /// The micro-batches of every replica in sync together, where workers take different numbers
  /// (logical input shards held unevenly); 0: micro_batches on every replica. A step's
  /// gradients and loss are means over all of them.
  int64_t micro_batches_in_sync = 0;
  /// Whether optimizers step in the kernels' fused pass where it applies
  /// (RunConfig::fused_optimizer_step); a VariableStore that steps them elsewhere (ps tasks) says so there.
  bool fused_optimizer_step = true;
  /// On the chief: loads the latest checkpoint of model_dir into replica 0's variables and
  /// optimizers and returns its progress; nullopt when there is none. A VariableStore whose
  /// state lives elsewhere restores it from there when it was lost (a ps task restarted).
  std::function<std::optional<TrainingProgress>()> restore_latest_checkpoint;
};

/// What a step synchronizes. Every worker calls its methods in the same order.
class StepSync {
 public:
  virtual ~StepSync() = default;

  /// Called for each local replica right before the backward of its last micro-batch, with
  /// its variables, loss and summaries: a StepSync that reduces while backward runs
  /// prepares here. `local` are this worker's flags.
  virtual void before_last_backward(int replica, const ReplicaStep& step, StepFlags local) = 0;
  /// After every local replica's backward, whose gradients (in `.grad()`) are sums over the
  /// step's micro-batches, a variable that backward left without one counting as zero: makes
  /// every replica's gradients those to apply, each variable's defined, sets `replicas[0]`'s
  /// loss and summaries to their means over every replica in sync, and returns what any
  /// worker's flags said.
  virtual StepFlags finish(std::vector<ReplicaStep>& replicas, StepFlags local) = 0;
  /// True on every worker when `flag` is true on any worker.
  virtual bool any_worker(bool flag) = 0;
  /// Returns once every worker has called barrier(): the end of this worker's training.
  virtual void barrier() = 0;
};

/// Clipping of a step's gradients (EstimatorSpec's), for a VariableStore that combines several
/// workers' gradients itself (VariableStore::combines_gradients): it clips what it combines.
struct GradientClipping {
  /// tf.clip_by_value's bounds (min, max).
  std::optional<std::pair<double, double>> value;
  /// tf.clip_by_global_norm's clip norm.
  std::optional<double> global_norm;
};

/// How apply() updates the variables after a step's finish().
struct StepUpdate {
  /// False when the gradients are not finite (loss scaling): nothing is applied.
  bool finite = true;
  /// The global step before this one.
  int64_t global_step = 0;
  /// This worker's batches consumed after the step.
  int64_t input_position = 0;
  /// Steps every local replica's optimizer on the gradients finish() made (what remains of
  /// it after ReplicaStep::gradients_final).
  std::function<void()> step_optimizers;
  /// Where the store combines the gradients: how it clips them.
  GradientClipping clipping;
  /// Where it clipped by global norm: called with the global norm before clipping.
  std::function<void(double global_norm)> clipped_norm;
};

/// Where the variables live. Every worker calls its methods in the same order.
class VariableStore {
 public:
  virtual ~VariableStore() = default;

  /// Called when replica 0's model_fn creates variables (a module's parameters and buffers,
  /// or a buffer), before they are used: makes them the training's current values (the
  /// chief's, or those the ps tasks hold).
  virtual void initialize(const NamedVariables& variables) = 0;
  /// True where apply() combines several workers' gradients into one update itself (ps tasks
  /// in sync mode): clipping belongs to what it combines (StepUpdate::clipping), not to each
  /// worker's gradients. False where the gradients finish() made are those applied.
  virtual bool combines_gradients() const { return false; }
  /// Where this worker's input continues (batches to skip), when the store knows it better
  /// than the checkpoint the run restored; nullopt otherwise. Called once, before the first step.
  virtual std::optional<int64_t> resume_position() { return std::nullopt; }
  /// After StepSync::finish: applies the step's update, makes the replicas' buffers what
  /// the strategy keeps, and returns the global step after it. May set `flags.job_finished`
  /// (the chief finished the job elsewhere) or `flags.stop_signal` (a signal cut the update).
  virtual int64_t apply(std::vector<ReplicaStep>& replicas, const StepUpdate& update, StepFlags& flags) = 0;
  /// On the chief, before it saves a checkpoint: when replica 0's state is not the
  /// training's own (it lives on ps tasks), makes replica 0's variables and optimizer state
  /// the current ones and returns the progress they belong to; nullopt when replica 0
  /// holds the training's state already.
  virtual std::optional<TrainingProgress> before_save() { return std::nullopt; }
};

/// The step seam of one training run, made by Strategy::make_training_sync.
struct TrainingSync {
  std::unique_ptr<StepSync> step;
  std::unique_ptr<VariableStore> variables;
};

/// How the replicas of a strategy keep their buffers (the state training changes without
/// gradients: BatchNorm's running statistics, register_buffer, ModelContext::buffer) equal.
/// They are made equal after every training step, so checkpoints, evaluation and every
/// replica's next step see the same values.
enum class BufferSync {
  /// Every replica takes the values of the chief's first replica, as PyTorch DDP's
  /// broadcast_buffers (the default).
  kBroadcast,
  /// Floating-point buffers become their mean over every replica (running statistics of
  /// the whole global batch); the others are broadcast.
  kAverage,
  /// Each replica keeps its own; checkpoints hold the chief's first replica's.
  kNone,
};

/// "broadcast", "average" or "none".
const char* BufferSyncName(BufferSync sync);

/// The StepSync every all-reduce strategy uses: with one replica in sync, nothing crosses a
/// replica; with one local replica per worker and a collective, gradients are all-reduced in
/// buckets (`buckets`) while backward runs (GradientReducer), the loss and the flags riding in
/// the last bucket; otherwise one flat average over every replica after backward.
std::unique_ptr<StepSync> CreateAllReduceStepSync(Strategy& strategy, const StepSyncOptions& options,
                                                  const GradientReducerOptions& buckets);

/// The VariableStore of replicas that live in this process, on every worker alike: new
/// variables take the chief's values (a broadcast), a step's update is each replica's
/// optimizer step, and the buffers are then made equal as `buffers` says.
std::unique_ptr<VariableStore> CreateReplicaVariables(Strategy& strategy, BufferSync buffers);

}  // namespace est::distribute
