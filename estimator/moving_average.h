#pragma once
/// Exponential moving averages of the weights (tf.train.ExponentialMovingAverage), kept by
/// the framework when RunConfig::moving_average is set: checkpointed beside the weights, and
/// used in their place for evaluation and prediction, while training continues on the
/// weights themselves.

#include <torch/arg.h>

namespace est {

/// The suffix of a variable's moving average among a checkpoint's tensors, as TensorFlow's:
/// "dense/weight/ExponentialMovingAverage".
inline constexpr const char* kMovingAverageSuffix = "/ExponentialMovingAverage";

/// How the moving averages of every trainable variable are kept: after each training step,
/// shadow -= (1 - d) * (shadow - variable), starting from the variable's initial value.
struct MovingAverageOptions {
  /// Throws ConfigError naming the field that is out of range.
  void validate() const;

  /// d, in [0, 1]: values near 1 (0.999, 0.9999) average over many steps.
  TORCH_ARG(double, decay) = 0.999;
  /// TensorFlow's num_updates warmup: the decay of the step that makes global step n is
  /// min(decay, (1 + n) / (10 + n)), so early averages follow the weights closely.
  TORCH_ARG(bool, num_updates) = false;
};

/// Which weights evaluation, prediction and export read from a checkpoint (TensorFlow's choice
/// of a Saver over ExponentialMovingAverage.variables_to_restore() in a model_fn's Scaffold).
enum class InferenceWeights {
  /// The moving averages where RunConfig::moving_average is set, else the variables as
  /// trained; a checkpoint holding averages that this reads past is warned about.
  kAuto,
  /// Each variable's moving average (a variable without one, a buffer, as it is); a
  /// checkpoint without any is a CheckpointError.
  kMovingAverages,
  /// The variables as trained, whatever else the checkpoint holds.
  kVariables,
};

}  // namespace est
