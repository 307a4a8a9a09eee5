#pragma once
/// Mixed precision (tf.keras.mixed_precision's "mixed_bfloat16" and "mixed_float16"
/// policies): model_fn computes in a 16-bit dtype under LibTorch's autocast while the
/// variables, the optimizer and checkpoints stay float32; float16 adds dynamic loss scaling.

#include <torch/arg.h>

#include <cstdint>
#include <string>

namespace est {

/// The dtype autocast runs model_fn's eligible ops in (matmuls, convolutions); kNone
/// runs everything in the variables' dtype.
enum class MixedPrecision {
  kNone,      ///< no autocast
  kBFloat16,  ///< bfloat16 on CPU and CUDA devices; float32's range, so no loss scaling is needed
  kFloat16,   ///< float16 on CUDA devices, with dynamic loss scaling by default
};

/// "none", "bfloat16" or "float16".
const char* MixedPrecisionName(MixedPrecision precision);
/// The MixedPrecision named "none", "bfloat16" (or "bf16"), "float16" (or "fp16");
/// ConfigError listing the names otherwise.
MixedPrecision ParseMixedPrecision(const std::string& name);

/// Dynamic loss scaling (tf.keras.mixed_precision.LossScaleOptimizer, torch.cuda.amp's
/// GradScaler): the loss is multiplied by the scale before backward and the gradients are
/// divided by it after the all-reduce. A step whose gradients are not all finite is not
/// applied and halves the scale; `growth_interval` applied steps in a row double it.
struct LossScaleOptions {
  /// Throws ConfigError naming the field that is out of range.
  void validate() const;

  /// The scale of the first step (2^15, as TensorFlow's).
  TORCH_ARG(double, initial_scale) = 32768.0;
  /// Factor applied after growth_interval finite steps in a row; > 1.
  TORCH_ARG(double, growth_factor) = 2.0;
  /// Factor applied after a step with non-finite gradients; in (0, 1).
  TORCH_ARG(double, backoff_factor) = 0.5;
  /// Finite steps in a row before the scale grows; > 0.
  TORCH_ARG(int64_t, growth_interval) = 2000;
};

}  // namespace est
