#pragma once
/// DynamicLossScaler: the scale of dynamic loss scaling and its update rule (see
/// LossScaleOptions). Internal to the estimator.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "estimator/mixed_precision.h"

namespace est {

/// Checkpoint names of the scaler's state, as tf.keras.mixed_precision.LossScaleOptimizer's.
inline constexpr const char* kLossScaleName = "loss_scale/current_loss_scale";
inline constexpr const char* kLossScaleGoodStepsName = "loss_scale/good_steps";

/// Scales the loss before backward and unscales the gradients after, adjusting the scale
/// from whether the gradients were finite.
class DynamicLossScaler {
 public:
  /// Starts at options.initial_scale(); throws ConfigError for invalid options.
  explicit DynamicLossScaler(LossScaleOptions options);

  /// The current scale.
  double scale() const { return scale_; }
  /// Finite steps in a row since the scale last changed.
  int64_t good_steps() const { return good_steps_; }
  /// Continues from a saved state: `scale` positive and finite, `good_steps` >= 0 (the
  /// caller checks what it read).
  void restore(double scale, int64_t good_steps);

  /// `loss` times the scale, for backward.
  at::Tensor scale_loss(const at::Tensor& loss) const;
  /// Divides the gradient of each variable by the scale, in place, and returns whether
  /// every gradient is finite. Variables without a gradient are skipped.
  bool unscale(const std::vector<at::Tensor>& variables) const;
  /// Records a step: non-finite gradients multiply the scale by the backoff factor,
  /// growth_interval finite steps in a row by the growth factor.
  void update(bool finite);

 private:
  LossScaleOptions options_;
  double scale_;
  int64_t good_steps_ = 0;
};

}  // namespace est
