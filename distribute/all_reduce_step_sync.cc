// The all-reduce StepSyncs: one replica in sync (nothing to reduce), a flat average over
// every replica after backward, and bucketed all-reduce while backward runs.

#include <ATen/ATen.h>

#include <memory>
#include <utility>

#include "common/error.h"
#include "common/logging.h"
#include "distribute/collective/collective.h"
#include "distribute/gradient_reducer.h"
#include "distribute/micro_batches.h"
#include "distribute/step_sync.h"
#include "distribute/strategy.h"

namespace est::distribute {
namespace {

// The agreement every all-reduce StepSync makes through the strategy.
class StrategyStepSync : public StepSync {
 public:
  StrategyStepSync(Strategy& strategy, const StepSyncOptions& options)
      : strategy_(strategy),
        micro_batches_(CheckedMicroBatches(options)),
        micro_batches_in_sync_(options.micro_batches_in_sync) {
    EST_CHECK(micro_batches_in_sync_ >= 0, ConfigError, "micro_batches_in_sync must not be negative, got ",
              micro_batches_in_sync_);
  }
  bool any_worker(bool flag) override { return strategy_.any_worker(flag); }
  void barrier() override { strategy_.barrier(); }

 protected:
  // The micro-batches of every replica in sync, whose mean a step's gradients are.
  int64_t micro_batches_in_sync() const {
    return micro_batches_in_sync_ > 0 ? micro_batches_in_sync_ : strategy_.num_replicas_in_sync() * micro_batches_;
  }
  // For a StepSync that weighs every replica alike.
  void check_even() const {
    EST_CHECK(micro_batches_in_sync() == strategy_.num_replicas_in_sync() * micro_batches_, ConfigError,
              strategy_.name(),
              ": replicas in sync that take different numbers of micro-batches need one replica per "
              "worker and a collective (",
              micro_batches_in_sync(), " micro-batches over ", strategy_.num_replicas_in_sync(), " replicas, ",
              micro_batches_, " here)");
  }

  Strategy& strategy_;
  const int64_t micro_batches_;
  const int64_t micro_batches_in_sync_;  ///< as given; 0: micro_batches_ on every replica
};

// The only replica in sync: its gradients are applied as they are.
class SingleReplicaStepSync final : public StrategyStepSync {
 public:
  SingleReplicaStepSync(Strategy& strategy, const StepSyncOptions& options) : StrategyStepSync(strategy, options) {
    check_even();
  }
  void before_last_backward(int, const ReplicaStep&, StepFlags) override {}
  StepFlags finish(std::vector<ReplicaStep>& replicas, StepFlags local) override {
    FinishLocalGradients(replicas.front(), micro_batches_);
    return local;
  }
};

// Several replicas: after backward, every replica's gradients, loss, summaries and flags
// averaged over all replicas in sync in one flat all-reduce.
class FlatStepSync final : public StrategyStepSync {
 public:
  FlatStepSync(Strategy& strategy, const StepSyncOptions& options) : StrategyStepSync(strategy, options) {
    check_even();
  }
  void before_last_backward(int, const ReplicaStep&, StepFlags) override {}
  StepFlags finish(std::vector<ReplicaStep>& replicas, StepFlags local) override {
    std::vector<std::vector<at::Tensor>> averaged(replicas.size());
    for (size_t r = 0; r < replicas.size(); ++r) {
      ReplicaStep& step = replicas[r];
      FinishLocalGradients(step, micro_batches_);
      auto& values = averaged[r];
      for (at::Tensor& variable : step.variables) values.push_back(variable.grad());
      values.push_back(step.loss.detach().clone());
      for (const at::Tensor& value : step.summaries) values.push_back(value.detach().to(at::kFloat).clone());
      values.push_back(at::scalar_tensor(local.input_ended ? 1.0 : 0.0, at::kFloat));
      values.push_back(at::scalar_tensor(local.stop_signal ? 1.0 : 0.0, at::kFloat));
      values.push_back(at::scalar_tensor(local.stop_requested ? 1.0 : 0.0, at::kFloat));
      values.push_back(at::scalar_tensor(local.newcomer_waiting ? 1.0 : 0.0, at::kFloat));
    }
    strategy_.average_across_replicas(averaged);
    ReplicaStep& first = replicas.front();
    const auto& values = averaged.front();
    size_t index = values.size() - first.summaries.size() - 5;
    first.loss = values[index++];
    for (at::Tensor& value : first.summaries) value = values[index++];
    StepFlags any;
    any.input_ended = values[index++].item<float>() > 0;
    any.stop_signal = values[index++].item<float>() > 0;
    any.stop_requested = values[index++].item<float>() > 0;
    any.newcomer_waiting = values[index].item<float>() > 0;
    return any;
  }
};

// One replica per worker: gradients are all-reduced in buckets while the last backward
// runs (or after it: GradientReducerOptions::overlap); the loss and the four flags ride in
// the last bucket. Summaries, when the model has any, follow in one small all-reduce. Each
// bucket's variables are offered to the loop's gradients_final as its averages arrive.
class BucketedStepSync final : public StrategyStepSync {
 public:
  // GradientReducer::finish defines every variable's gradient.
  BucketedStepSync(Strategy& strategy, const StepSyncOptions& options, Collective& collective,
                   GradientReducerOptions buckets)
      : StrategyStepSync(strategy, options), collective_(collective), buckets_(std::move(buckets)) {}

  void before_last_backward(int, const ReplicaStep& step, StepFlags local) override {
    if (!reducer_) {
      reducer_ = std::make_unique<GradientReducer>(
          collective_, step.variables, static_cast<int>(micro_batches_in_sync()), buckets_, /*extras_numel=*/5);
      reducer_variables_ = step.variables.size();
      Log().info("Gradient all-reduce: {} buckets, {}", reducer_->num_buckets(),
                 reducer_->overlaps_backward() ? "each all-reduced while backward runs"
                                               : "all-reduced after backward (no core to spare for the "
                                                 "shared-memory all-reduce beside backward's threads)");
    }
    EST_CHECK(step.variables.size() == reducer_variables_, ModelError, "model_fn created trainable variables after "
              "the first training step (", reducer_variables_, " then ", step.variables.size(),
              "); create all state on the first call");
    // Weighed by this worker's micro-batches, then divided by every worker's (the divisor):
    // the mean over every micro-batch in sync.
    // The five values are made on the loss's device (a GPU's, with NCCL).
    const auto scale = static_cast<double>(micro_batches_);
    const auto on_loss_device = step.loss.options().dtype(at::kFloat);
    reducer_->prepare(at::stack({step.loss.detach().to(at::kFloat).reshape({}) * scale,
                                 at::scalar_tensor(local.input_ended ? scale : 0.0, on_loss_device),
                                 at::scalar_tensor(local.stop_signal ? scale : 0.0, on_loss_device),
                                 at::scalar_tensor(local.stop_requested ? scale : 0.0, on_loss_device),
                                 at::scalar_tensor(local.newcomer_waiting ? scale : 0.0, on_loss_device)}));
  }

  StepFlags finish(std::vector<ReplicaStep>& replicas, StepFlags) override {
    ReplicaStep& step = replicas.front();
    // Where a lost worker leaves the others training, no variable changes before every
    // bucket arrived: a step that fails part-way is taken again from the same state.
    if (step.gradients_final && strategy_.elastic() == nullptr) {
      // Each bucket's variables, as its averages arrive: updated while later buckets travel.
      reducer_->finish([&](const std::vector<size_t>& parameters) {
        std::vector<at::Tensor> variables;
        for (size_t k : parameters) variables.push_back(step.variables[k]);
        step.gradients_final(variables);
      });
    } else {
      reducer_->finish();
    }
    const at::Tensor extras = reducer_->extras();  // a view of the reducer's buffer: copy out
    step.loss = extras[0].to(step.loss.scalar_type(), /*non_blocking=*/false, /*copy=*/true);
    const at::Tensor flags = extras.slice(0, 1, 5).cpu();  // one copy (and wait) on a GPU
    if (!step.summaries.empty()) {
      std::vector<std::vector<at::Tensor>> summaries(1);
      for (const at::Tensor& value : step.summaries) summaries[0].push_back(value.detach().to(at::kFloat).clone());
      strategy_.average_across_replicas(summaries);
      step.summaries = std::move(summaries[0]);
    }
    StepFlags any;
    any.input_ended = flags[0].item<float>() > 0;
    any.stop_signal = flags[1].item<float>() > 0;
    any.stop_requested = flags[2].item<float>() > 0;
    any.newcomer_waiting = flags[3].item<float>() > 0;
    return any;
  }

 private:
  Collective& collective_;
  const GradientReducerOptions buckets_;
  std::unique_ptr<GradientReducer> reducer_;
  size_t reducer_variables_ = 0;
};

}  // namespace

std::unique_ptr<StepSync> CreateAllReduceStepSync(Strategy& strategy, const StepSyncOptions& options,
                                                  const GradientReducerOptions& buckets) {
  if (strategy.num_replicas_in_sync() == 1) return std::make_unique<SingleReplicaStepSync>(strategy, options);
  if (strategy.num_local_replicas() == 1) {
    if (Collective* collective = strategy.collective())
      return std::make_unique<BucketedStepSync>(strategy, options, *collective, buckets);
  }
  return std::make_unique<FlatStepSync>(strategy, options);
}

}  // namespace est::distribute
