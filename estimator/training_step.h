#pragma once
/// TrainingStep: one synchronous step of a worker's local replicas. Internal to the estimator.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "distribute/step_sync.h"
#include "estimator/async_host_copy.h"
#include "estimator/estimator_impl.h"
#include "estimator/loss_scaler.h"
#include "estimator/replica_set.h"

namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

namespace est {

/// Where the training stands when a step starts.
struct StepPlace {
  int64_t global_step = 0;
  /// Each local replica's micro-batches in the step.
  int64_t micro_batches = 1;
  /// The input position once the step is applied.
  int64_t input_position_after = 0;
};

/// Forward and backward of model_fn on each local replica's micro-batches, the strategy's
/// StepSync (gradients averaged over every replica in sync, the loss, summaries and flags
/// agreed), loss scaling, the gradient transform and clipping model_fn asked for, and the
/// VariableStore's update. Each replica's optimizer may update the variables whose gradients
/// are final while the others are still being reduced.
class TrainingStep {
 public:
  /// Steps `replicas` (which outlive it) with `estimator`'s model_fn and RunConfig: loss
  /// scaling, mixed precision, the fused optimizer step.
  TrainingStep(const Estimator::Impl& estimator, ReplicaSet& replicas);

  /// The loss scaling of RunConfig; nullopt without.
  std::optional<DynamicLossScaler>& loss_scaler() { return loss_scaler_; }

  /// Runs one step on `batches` (micro-batch m of local replica r at index m * replicas + r)
  /// through `sync`. Returns replica 0's spec holding the agreed loss (on its way to the host:
  /// wait_for_loss()) and summaries; sets `stop` to what any worker's `local` flags said and
  /// `global_step` to the step the VariableStore reached.
  EstimatorSpec run(const std::vector<data::Element>& batches, const StepPlace& place, distribute::TrainingSync& sync,
                    distribute::StepFlags local, distribute::StepFlags& stop, int64_t& global_step);
  /// Returns once the loss of the last step is on the host.
  void wait_for_loss() { loss_to_host_.wait(); }

 private:
  /// Forward and backward of local replica `r` on each of its micro-batches, gradients summed
  /// in `.grad` (cleared first); `before_last_backward(spec)` runs after the last forward,
  /// when spec's loss and summaries hold their means over the micro-batches.
  template <typename BeforeLastBackward>
  EstimatorSpec forward_backward(int r, const std::vector<data::Element>& batches,
                                 BeforeLastBackward&& before_last_backward);
  /// Before replica `r`'s first backward: checks its optimizers, clears their gradients and
  /// sets their learning rates.
  void prepare_optimizers(int r, const EstimatorSpec& spec);
  /// The learning rates the schedules of `first` set, as its summaries.
  void add_learning_rate_summaries(EstimatorSpec& first);
  /// Clears the gradients of `optimizer`'s parameters before a step's first backward.
  void clear_gradients(torch::optim::Optimizer& optimizer, const ModelContext& ctx);
  /// Backward of `loss`, times the loss scale with loss scaling.
  void backward(const at::Tensor& loss, const data::Element& batch);
  /// With loss scaling: unscales the averaged gradients; false where they are not finite.
  bool unscale_gradients();
  /// The gradient transform and clipping model_fn asked for, on every replica.
  void process_gradients(const std::vector<EstimatorSpec>& specs, EstimatorSpec& first,
                         distribute::StepUpdate& update);
  /// The global norm before and after clipping, as summaries of `first`.
  static void add_norm_summaries(EstimatorSpec& first, const at::Tensor& norm);

  const Estimator::Impl& estimator_;
  ReplicaSet& replicas_;
  /// For each local replica, the several optimizers whose variables were last checked.
  std::vector<std::vector<torch::optim::Optimizer*>> checked_optimizers_;
  std::optional<DynamicLossScaler> loss_scaler_;
  AsyncHostCopy loss_to_host_;
  int64_t global_step_ = 0;                       ///< the step being run's
  int64_t micro_batches_ = 1;                     ///< the step being run's
  distribute::TrainingSync* sync_ = nullptr;      ///< the step being run's
};

}  // namespace est
