// The step seam of ParameterServerStrategy: each worker's step is its own (its gradients
// averaged over its micro-batches); the variables live on the ps tasks, which take the
// pushed gradients and give the new values.

#include "distribute/parameter_server_step_sync.h"

#include <ATen/ATen.h>
#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include <map>
#include <optional>

#include "common/error.h"
#include "common/logging.h"
#include "distribute/micro_batches.h"
#include "distribute/parameter_server/ps_connection.h"
#include "distribute/parameter_server/shard_optimizer.h"

namespace est::distribute {
namespace {

ps::Clipping ToProto(const GradientClipping& clipping) {
  ps::Clipping proto;
  if (clipping.value) {
    proto.set_by_value(true);
    proto.set_value_min(clipping.value->first);
    proto.set_value_max(clipping.value->second);
  }
  proto.set_global_norm(clipping.global_norm.value_or(0.0));
  return proto;
}

// What a step synchronizes: nothing across workers; the ps tasks aggregate.
class ParameterServerStepSync final : public StepSync {
 public:
  ParameterServerStepSync(std::shared_ptr<PsConnection> connection, bool is_chief, const StepSyncOptions& options)
      : connection_(std::move(connection)), is_chief_(is_chief), micro_batches_(CheckedMicroBatches(options)) {}

  void before_last_backward(int, const ReplicaStep&, StepFlags) override {}

  StepFlags finish(std::vector<ReplicaStep>& replicas, StepFlags local) override {
    EST_ASSERT(replicas.size() == 1, "ParameterServerStrategy trains one replica per worker");
    FinishLocalGradients(replicas.front(), micro_batches_);
    return local;
  }

  bool any_worker(bool flag) override { return flag; }

  /// The end of this worker's training: the chief finishes the job on the ps tasks, another
  /// worker leaves.
  void barrier() override { connection_->finish(/*job=*/is_chief_); }

 private:
  std::shared_ptr<PsConnection> connection_;
  const bool is_chief_;
  const int64_t micro_batches_;
};

// Where the variables live: on the ps tasks, pulled into the worker's replica.
class ParameterServerVariables final : public VariableStore {
 public:
  ParameterServerVariables(std::shared_ptr<PsConnection> connection, bool is_chief, const StepSyncOptions& options)
      : connection_(std::move(connection)),
        is_chief_(is_chief),
        restore_latest_checkpoint_(options.restore_latest_checkpoint) {}

  std::optional<int64_t> resume_position() override {
    ps_ready_ = connection_->initialized();
    checked_ = true;
    if (!ps_ready_) return std::nullopt;
    const auto& positions = connection_->input_positions();
    auto it = positions.find(connection_->worker());
    if (it == positions.end()) return std::nullopt;
    Log().info("Continuing the input where this worker's last push left it: batch {}", it->second);
    return it->second;
  }

  void initialize(const NamedVariables& variables) override {
    created_.insert(created_.end(), variables.begin(), variables.end());
    if (!checked_) {
      ps_ready_ = connection_->initialized();
      checked_ = true;
    }
    // The chief initializes empty ps tasks from its own variables at its first step.
    if (is_chief_ && !ps_ready_) return;
    if (!ps_ready_) {
      connection_->wait_initialized();
      ps_ready_ = true;
    }
    if (!initial_) {
      try {
        initial_ = connection_->pull(/*with_state=*/false);
      } catch (const PsJobFinished&) {
        job_finished_ = true;  // the job ended before this worker's first step: it takes none
        return;
      }
      pulled_step_ = initial_->global_step;
    }
    const auto& plan = connection_->placement().variables();
    torch::NoGradGuard no_grad;
    for (const auto& [name, tensor] : variables) {
      for (size_t v = 0; v < plan.size(); ++v) {
        if (plan[v].name != name) continue;
        EST_CHECK(tensor.sizes() == at::IntArrayRef(plan[v].shape) && tensor.scalar_type() == plan[v].dtype, ModelError,
                  "variable '", name, "' has shape ", tensor.sizes(), " and dtype ", tensor.scalar_type(),
                  " here, but the ps tasks hold it with shape ", at::IntArrayRef(plan[v].shape), " and dtype ",
                  plan[v].dtype, ": every worker's model_fn must create the same variables");
        tensor.copy_(initial_->values[v]);
      }
    }
  }

  /// In sync mode the ps tasks average the step's pushes, and clip that.
  bool combines_gradients() const override { return connection_->rule().mode() == ps::UpdateRule::SYNC; }

  // Buffers stay on each worker: checkpoints hold the chief's.
  int64_t apply(std::vector<ReplicaStep>& replicas, const StepUpdate& update, StepFlags& flags) override {
    const int64_t global_step = update.global_step;
    const int64_t input_position = update.input_position;
    if (job_finished_) {
      flags.job_finished = true;
      return global_step;
    }
    ReplicaStep& step = replicas.front();
    if (variables_.empty()) bind(step, global_step, input_position);
    initial_.reset();
    try {
      if (update.finite) {
        std::vector<at::Tensor> gradients;
        for (const at::Tensor& variable : variables_) gradients.push_back(variable.grad());
        const std::optional<double> norm = recovering([&] {
          return connection_->push(gradients, describe_optimizers(), input_position, pulled_step_, global_step,
                                   ToProto(update.clipping));
        });
        if (norm && update.clipped_norm) update.clipped_norm(*norm);
      }
      const PsValues values = recovering([&] { return connection_->pull(/*with_state=*/false, variables_); });
      assign(values.values);
      pulled_step_ = values.global_step;
      return values.global_step;
    } catch (const PsJobFinished&) {
      flags.job_finished = true;
      return global_step;
    } catch (const Interrupted& stopped) {
      // A stop signal cut a push or pull that waited for other workers: the step is not
      // applied here, and the run stops after it (the chief saves what the ps tasks hold).
      Log().warn("{}; stopping at global step {}", stopped.what(), global_step);
      flags.stop_signal = true;
      return global_step;
    }
  }

  std::optional<TrainingProgress> before_save() override {
    if (variables_.empty()) return std::nullopt;  // the ps tasks hold the chief's own values yet
    const PsValues values = recovering([&] { return connection_->pull(/*with_state=*/true, variables_); });
    assign(values.values);
    for (size_t v = 0; v < variables_.size(); ++v)
      if (torch::optim::Optimizer* holder = holder_of(variables_[v]))
        SetOptimizerSlots(*holder, variables_[v], values.slots[v]);
    TrainingProgress progress;
    progress.global_step = values.global_step;
    for (const auto& [worker, position] : values.input_positions) progress.input_positions[static_cast<int>(worker)] = position;
    return progress;
  }

 private:
  /// At the first step: the plan's variables in this replica (by name), and on the chief,
  /// the ps tasks initialized from them when they hold nothing yet.
  void bind(const ReplicaStep& step, int64_t global_step, int64_t input_position) {
    EST_CHECK(!step.optimizers.empty(), ConfigError, "ParameterServerStrategy needs the optimizer of model_fn's "
              "EstimatorSpec::Train");
    optimizers_ = step.optimizers;
    std::vector<VariableInfo> infos;
    for (const at::Tensor& variable : step.variables) {
      std::string name;
      for (const auto& [created_name, tensor] : created_)
        if (tensor.unsafeGetTensorImpl() == variable.unsafeGetTensorImpl()) name = created_name;
      EST_CHECK(!name.empty(), ModelError, "a trainable variable of shape ", variable.sizes(),
                " was not created through ModelContext; ParameterServerStrategy places variables by their names");
      infos.push_back({name, variable.sizes().vec(), variable.scalar_type()});
    }
    if (!ps_ready_) {
      std::vector<at::Tensor> values;
      std::vector<OptimizerSlots> slots;
      std::vector<std::optional<ps::OptimizerConfig>> optimizers;
      for (size_t v = 0; v < infos.size(); ++v) {
        const at::Tensor& variable = step.variables[v];
        const torch::optim::Optimizer* holder = holder_of(variable);
        values.push_back(variable.detach());
        slots.push_back(holder ? GetOptimizerSlots(*holder, variable) : OptimizerSlots{});
        optimizers.push_back(holder ? std::optional<ps::OptimizerConfig>(DescribeOptimizer(*holder, variable, infos[v].name))
                                    : std::nullopt);
      }
      pulled_step_ = global_step;
      if (connection_->initialize(infos, values, optimizers, slots, global_step, {{0, input_position}})) {
        Log().info("Initialized the variables on {} ps task(s) at global step {}: {}", connection_->num_ps(),
                   global_step, connection_->placement().describe());
      }
      ps_ready_ = true;
    }
    const auto& plan = connection_->placement().variables();
    EST_CHECK(plan.size() == infos.size(), ModelError, "model_fn creates ", infos.size(),
              " trainable variables here, but the ps tasks hold ", plan.size(),
              ": every worker's model_fn must create the same variables");
    for (const VariableInfo& planned : plan) {
      size_t found = infos.size();
      for (size_t i = 0; i < infos.size(); ++i)
        if (infos[i].name == planned.name) found = i;
      EST_CHECK(found < infos.size(), ModelError, "the ps tasks hold variable '", planned.name,
                "', which model_fn does not create here as a trainable variable");
      variables_.push_back(step.variables[found]);
    }
  }

  /// Runs `call`; when a ps task restarted empty, recovers (the chief restores every task from
  /// the latest checkpoint, the others wait for it) and runs it again, a few times at most.
  template <typename Call>
  auto recovering(Call&& call) -> decltype(call()) {
    constexpr int kAttempts = 3;
    for (int attempt = 1;; ++attempt) {
      try {
        return call();
      } catch (const PsRestarted& restarted) {
        if (attempt == kAttempts) throw;
        Log().warn("{}; {}", restarted.what(),
                   is_chief_ ? "restoring every ps task from the latest checkpoint"
                             : "waiting for the chief to restore the ps tasks");
        if (is_chief_) {
          restore_ps();
        } else {
          connection_->wait_initialized();  // and learns the tasks' new incarnations
        }
      }
    }
  }

  /// The chief, after a ps task restarted empty: every task takes the latest checkpoint's
  /// values, optimizer state, global step and input positions (the chief's current values
  /// when there is no checkpoint yet), so that they hold one consistent version.
  void restore_ps() {
    std::optional<TrainingProgress> progress =
        restore_latest_checkpoint_ ? restore_latest_checkpoint_() : std::nullopt;
    if (!progress) {
      Log().warn("no checkpoint to restore the ps tasks from: they restart from the chief's current values, with "
                 "fresh optimizer state");
      progress = TrainingProgress{pulled_step_, {}};
    }
    std::vector<at::Tensor> values;
    std::vector<OptimizerSlots> slots;
    std::vector<std::optional<ps::OptimizerConfig>> optimizers = describe_optimizers();
    for (size_t v = 0; v < variables_.size(); ++v) {
      values.push_back(variables_[v].detach());
      const torch::optim::Optimizer* holder = holder_of(variables_[v]);
      slots.push_back(holder ? GetOptimizerSlots(*holder, variables_[v]) : OptimizerSlots{});
    }
    std::map<uint32_t, int64_t> positions;
    for (const auto& [worker, position] : progress->input_positions) positions[static_cast<uint32_t>(worker)] = position;
    connection_->initialize(connection_->placement().variables(), values, optimizers, slots, progress->global_step,
                            positions, /*replace=*/true);
    pulled_step_ = progress->global_step;
    Log().info("Restored the variables on {} ps task(s) at global step {}", connection_->num_ps(),
               progress->global_step);
  }

  /// The optimizer of model_fn's that steps `variable`; null when none does.
  torch::optim::Optimizer* holder_of(const at::Tensor& variable) const {
    for (torch::optim::Optimizer* optimizer : optimizers_)
      if (OptimizerHolds(*optimizer, variable)) return optimizer;
    return nullptr;
  }

  /// The optimizer options of each plan variable now (a learning-rate schedule changes them).
  std::vector<std::optional<ps::OptimizerConfig>> describe_optimizers() const {
    std::vector<std::optional<ps::OptimizerConfig>> optimizers;
    const auto& plan = connection_->placement().variables();
    for (size_t v = 0; v < variables_.size(); ++v) {
      const torch::optim::Optimizer* holder = holder_of(variables_[v]);
      optimizers.push_back(holder ? std::optional<ps::OptimizerConfig>(DescribeOptimizer(*holder, variables_[v], plan[v].name))
                                  : std::nullopt);
    }
    return optimizers;
  }

  /// Puts the pulled values into this replica's variables: copies them, or, where the pull
  /// wrote into the variable itself, counts the change as an in-place one (autograd's version).
  void assign(const std::vector<at::Tensor>& values) {
    torch::NoGradGuard no_grad;
    for (size_t v = 0; v < variables_.size(); ++v) {
      if (values[v].is_same(variables_[v]))
        variables_[v].unsafeGetTensorImpl()->bump_version();
      else
        variables_[v].copy_(values[v]);
    }
  }

  std::shared_ptr<PsConnection> connection_;
  const bool is_chief_;
  const std::function<std::optional<TrainingProgress>()> restore_latest_checkpoint_;
  bool checked_ = false;   ///< whether the ps tasks were asked if they hold variables
  bool ps_ready_ = false;  ///< the ps tasks hold the variables
  bool job_finished_ = false;  ///< the chief finished the job before this worker's first step
  NamedVariables created_;  ///< every variable replica 0 created, by name
  std::optional<PsValues> initial_;  ///< the first pull, for the variables as model_fn creates them
  std::vector<at::Tensor> variables_;  ///< this replica's variables in the plan's order
  std::vector<torch::optim::Optimizer*> optimizers_;  ///< model_fn's, set at the first step
  int64_t pulled_step_ = 0;  ///< the global step of the values this replica holds
};

}  // namespace

TrainingSync CreateParameterServerSync(std::shared_ptr<PsConnection> connection, bool is_chief,
                                       const StepSyncOptions& options) {
  return {std::make_unique<ParameterServerStepSync>(connection, is_chief, options),
          std::make_unique<ParameterServerVariables>(connection, is_chief, options)};
}

}  // namespace est::distribute
