#pragma once
/// What EstimatorSpec::Train asks done to a step's averaged gradients before the optimizer
/// applies them: the user's transform, then clipping by value, then by global norm.
/// Internal to the estimator.

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "estimator/estimator_spec.h"

namespace est {

class ModelContext;

/// The summary tag of the global norm before clipping (TensorFlow's optimize_loss's).
inline constexpr const char* kGradientNormSummary = "global_norm/gradient_norm";
/// The summary tag of the global norm after clipping: below the norm before it at the steps
/// where the clip acted.
inline constexpr const char* kClippedGradientNormSummary = "global_norm/clipped_gradient_norm";

/// The global norm after clipping to `clip_norm` of gradients whose norm was `norm`: the
/// smaller of the two (`norm` itself when it is not finite, as the clip then leaves them).
at::Tensor ClippedGlobalNorm(const at::Tensor& norm, double clip_norm);

/// True when `spec` asks for any change to the gradients: then every gradient must be final
/// (averaged over the replicas) before any variable is updated.
bool ProcessesGradients(const EstimatorSpec& spec);

/// Runs `spec`'s gradient transform, if any, on the gradients (`.grad()`) of `ctx`'s trainable
/// variables at global step `step`.
void TransformGradients(const EstimatorSpec& spec, const ModelContext& ctx, int64_t step);

/// Clips the gradients of `ctx`'s trainable variables as `spec` says, by value and then by
/// global norm. Returns the global norm before clipping, a float64 scalar on the replica's
/// device, when `spec` clips by global norm; undefined otherwise.
at::Tensor ClipGradients(const EstimatorSpec& spec, const ModelContext& ctx);

}  // namespace est
