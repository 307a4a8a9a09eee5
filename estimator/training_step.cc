// One training step of a worker's local replicas.

#include "estimator/training_step.h"

#include <ATen/ATen.h>
#include <torch/optim/optimizer.h>
#include <torch/utils.h>

#include <deque>
#include <unordered_set>

#include "common/error.h"
#include "common/logging.h"
#include "distribute/optimizer/optimizer_step.h"
#include "distribute/replica_group.h"
#include "estimator/gradient_processing.h"
#include "estimator/model_code_error.h"
#include "estimator/optimizer_groups.h"
#include "estimator/optimizer_step_in_parts.h"
#include "estimator/schedules/set_learning_rate.h"

namespace est {
namespace {

// The summary tag of the learning rate a schedule set, as TensorFlow's.
constexpr const char* kLearningRateSummary = "learning_rate";

}  // namespace

TrainingStep::TrainingStep(const Estimator::Impl& estimator, ReplicaSet& replicas)
    : estimator_(estimator), replicas_(replicas), checked_optimizers_(static_cast<size_t>(replicas.size())) {
  if (auto options = estimator.config.effective_loss_scale()) loss_scaler_.emplace(*options);
}

// Forward and backward of local replica `r` on each of its micro-batches in `batches`,
// gradients summed in `.grad` (cleared first). `before_last_backward(spec)` runs after the
// last forward, when spec's loss and summaries hold their means over the micro-batches.
// Returns that spec.
template <typename BeforeLastBackward>
EstimatorSpec TrainingStep::forward_backward(int r, const std::vector<data::Element>& batches,
                               BeforeLastBackward&& before_last_backward) {
  ModelContext& ctx = replicas_.replica(r);
  const int64_t micro_batches = micro_batches_;
  at::Tensor loss_sum;
  TensorMap summary_sums;
  for (int64_t m = 0; m < micro_batches; ++m) {
    const auto& batch = batches[static_cast<size_t>(m * replicas_.size() + r)];
    EstimatorSpec spec = CallModelFn(estimator_.model_fn, ToDevice(batch, ctx), Mode::kTrain, ctx,
                                     global_step_, estimator_.config.mixed_precision);
    if (m == 0) prepare_optimizers(r, spec);
    const at::Tensor loss = spec.loss;
    if (micro_batches > 1) {
      loss_sum = m == 0 ? loss.detach().clone() : loss_sum.add_(loss.detach());
      for (auto& [tag, value] : spec.summaries) {
        auto [it, inserted] = summary_sums.try_emplace(tag, value.detach().to(at::kFloat));
        if (!inserted) it->second = it->second.add(value.detach().to(at::kFloat));
      }
    }
    if (m + 1 < micro_batches) {
      backward(loss, batch);
      continue;
    }
    if (micro_batches > 1) {
      spec.loss = loss_sum.div_(micro_batches);
      for (auto& [tag, value] : spec.summaries) value = summary_sums.at(tag).div_(micro_batches);
    }
    before_last_backward(spec);
    backward(loss, batch);
    return spec;
  }
  EST_ASSERT(false, "gradient_accumulation_steps must be positive");
}

// Before replica `r`'s first backward of a step, for the optimizers of its `spec`: checks
// that several optimizers share the trainable variables out (when they are new), clears
// their gradients and sets their learning rates.
void TrainingStep::prepare_optimizers(int r, const EstimatorSpec& spec) {
  ModelContext& ctx = replicas_.replica(r);
  std::vector<torch::optim::Optimizer*>& checked = checked_optimizers_[static_cast<size_t>(r)];
  if (spec.optimizers.size() > 1 && spec.optimizers != checked) {
    CheckOptimizerGroups(spec.optimizers, ctx);
    checked = spec.optimizers;
  }
  for (torch::optim::Optimizer* optimizer : spec.optimizers) clear_gradients(*optimizer, ctx);
  for (const auto& [optimizer, schedule] : spec.learning_rate_schedules) {
    if (optimizer != nullptr) {
      schedules::SetLearningRate(*optimizer, schedule, global_step_);
      continue;
    }
    for (torch::optim::Optimizer* each : spec.optimizers) schedules::SetLearningRate(*each, schedule, global_step_);
  }
}

// The learning rates `first`'s schedules set for this step, as summaries of `first`: one
// optimizer's under "learning_rate/<its name>"; "learning_rate" itself is the rate of a
// schedule of every optimizer, else of the first one-optimizer schedule model_fn gave.
void TrainingStep::add_learning_rate_summaries(EstimatorSpec& first) {
  for (const auto& [optimizer, schedule] : first.learning_rate_schedules) {
    const at::Tensor rate = at::scalar_tensor(schedule(global_step_), at::kDouble);
    if (optimizer != nullptr)
      first.summaries[std::string(kLearningRateSummary) + "/" + OptimizerName(optimizer, replicas_.replica(0))] =
          rate;
    if (optimizer == nullptr || first.summaries.count(kLearningRateSummary) == 0)
      first.summaries[kLearningRateSummary] = rate;
  }
}

// Before a step's first backward: clears the gradients of `optimizer`'s parameters. Those of
// `ctx`'s trainable variables are left undefined (StepSync::finish counts a missing one as
// zero and defines it), which saves a pass over them and lets backward hand the first
// gradient over without adding it to zeros; any other parameter's is zeroed, as zero_grad() does.
void TrainingStep::clear_gradients(torch::optim::Optimizer& optimizer, const ModelContext& ctx) {
  std::unordered_set<const void*> defined_by_sync;
  for (const at::Tensor& variable : ctx.trainable_variables()) defined_by_sync.insert(variable.unsafeGetTensorImpl());
  for (auto& group : optimizer.param_groups()) {
    for (auto& parameter : group.params()) {
      at::Tensor& grad = parameter.mutable_grad();
      if (!grad.defined()) continue;
      if (defined_by_sync.count(parameter.unsafeGetTensorImpl())) {
        grad.reset();
      } else {
        grad.detach_();
        grad.zero_();
      }
    }
  }
}

// Backward of `loss` (of model_fn on `batch`), times the loss scale when loss scaling is on.
void TrainingStep::backward(const at::Tensor& loss, const data::Element& batch) {
  RunModelCode("backward of model_fn's loss", Mode::kTrain, global_step_, batch, [&] {
    if (loss_scaler_) {
      loss_scaler_->scale_loss(loss).backward();
    } else {
      loss.backward();
    }
  });
}

// With loss scaling: divides every replica's averaged gradients by the scale and updates
// the scale; false when they are not all finite, and the step must not be applied. Every
// replica and worker holds the same averaged gradients, so all of them decide alike.
// Without loss scaling: true.
bool TrainingStep::unscale_gradients() {
  if (!loss_scaler_) return true;
  bool finite = true;
  for (int r = 0; r < replicas_.size(); ++r) {
    const bool replica_finite = loss_scaler_->unscale(replicas_.replica(r).trainable_variables());
    EST_ASSERT(r == 0 || replica_finite == finite, "local replicas hold the same averaged gradients");
    finite = replica_finite;
  }
  const double scale = loss_scaler_->scale();
  loss_scaler_->update(finite);
  if (!finite)
    Log().warn("Gradients of global step {} are not finite at loss scale {}: the update was skipped and the "
               "loss scale is now {}", global_step_, scale, loss_scaler_->scale());
  return finite;
}

// Applies the gradient transform and clipping that model_fn asked for to every local
// replica's averaged gradients; the global norm before clipping becomes a summary of `first`.
// A VariableStore that combines several workers' gradients itself clips what it combines.
void TrainingStep::process_gradients(const std::vector<EstimatorSpec>& specs, EstimatorSpec& first,
                       distribute::StepUpdate& update) {
  const bool store_clips = sync_->variables->combines_gradients();
  for (int r = 0; r < replicas_.size(); ++r) {
    const EstimatorSpec& spec = specs[static_cast<size_t>(r)];
    TransformGradients(spec, replicas_.replica(r), global_step_);
    if (store_clips) continue;
    const at::Tensor norm = ClipGradients(spec, replicas_.replica(r));
    if (r == 0 && norm.defined()) add_norm_summaries(first, norm);
  }
  if (!store_clips) return;
  update.clipping = {first.clip_value, first.clip_norm};
  update.clipped_norm = [&first](double norm) {
    add_norm_summaries(first, at::scalar_tensor(norm, at::kDouble));
  };
}

// The global norm of the gradients before clipping by `first`'s clip_norm, and after it, as
// summaries of `first`: where the two differ, the clip acted.
void TrainingStep::add_norm_summaries(EstimatorSpec& first, const at::Tensor& norm) {
  first.summaries[kGradientNormSummary] = norm;
  first.summaries[kClippedGradientNormSummary] = ClippedGlobalNorm(norm, *first.clip_norm);
}

// Forward and backward on every local replica, then the strategy's StepSync makes the
// gradients every replica applies and agrees the loss, the summaries and the flags; then
// its VariableStore applies the update. Returns replica 0's spec holding the agreed loss
// and summaries; sets `stop` to what any worker's `local` flags said.
EstimatorSpec TrainingStep::run(const std::vector<data::Element>& batches, const StepPlace& place,
                                distribute::TrainingSync& sync, distribute::StepFlags local, distribute::StepFlags& stop,
                                int64_t& global_step) {
  global_step_ = place.global_step;
  micro_batches_ = place.micro_batches;
  sync_ = &sync;
  std::vector<EstimatorSpec> specs(static_cast<size_t>(replicas_.size()));
  std::vector<distribute::ReplicaStep> steps(static_cast<size_t>(replicas_.size()));
  // Each replica's optimizer may update the variables whose gradients the StepSync has made
  // final while the others are still being reduced; not with loss scaling or a change to
  // the gradients (clipping), which must see every gradient before any is applied.
  std::deque<OptimizerStepInParts> in_parts;  // a deque: gradients_final holds references
  replicas_.group().run([&](int r) {
    specs[static_cast<size_t>(r)] = forward_backward(r, batches, [&](EstimatorSpec& last) {
      ModelContext& ctx = replicas_.replica(r);
      distribute::ReplicaStep& replica_step = steps[static_cast<size_t>(r)];
      replica_step.variables = ctx.trainable_variables();
      replica_step.buffers = ctx.buffers();
      replica_step.loss = last.loss;
      replica_step.optimizers = last.optimizers;
      if (!loss_scaler_ && !ProcessesGradients(last)) {
        std::vector<OptimizerStepInParts*> parts;
        for (torch::optim::Optimizer* optimizer : last.optimizers)
          parts.push_back(&in_parts.emplace_back(*optimizer, estimator_.config.fused_optimizer_step));
        replica_step.gradients_final = [parts](const std::vector<at::Tensor>& variables) {
          for (OptimizerStepInParts* part : parts) part->part(variables);
        };
      }
      for (const auto& [tag, value] : last.summaries) replica_step.summaries.push_back(value);
      sync_->step->before_last_backward(r, replica_step, local);
    });
  });
  stop = sync_->step->finish(steps, local);
  EstimatorSpec& first = specs.front();
  first.loss = loss_to_host_.start(steps.front().loss);  // travels to the host while the update runs
  size_t index = 0;
  for (auto& [tag, value] : first.summaries) value = steps.front().summaries[index++];
  add_learning_rate_summaries(first);
  distribute::StepUpdate update;
  update.finite = unscale_gradients();
  if (update.finite) process_gradients(specs, first, update);
  update.global_step = global_step_;
  update.input_position = place.input_position_after;
  update.step_optimizers = [&] {
    if (!in_parts.empty()) {
      for (OptimizerStepInParts& parts : in_parts) parts.rest();
      return;
    }
    for (auto& spec : specs)
      for (torch::optim::Optimizer* optimizer : spec.optimizers)
        distribute::StepOptimizer(*optimizer, estimator_.config.fused_optimizer_step);
  };
  global_step = sync_->variables->apply(steps, update, stop);
  return std::move(first);
}

}  // namespace est
