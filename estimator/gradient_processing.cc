#include "estimator/gradient_processing.h"

#include <ATen/ATen.h>
#include <torch/utils.h>

#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "estimator/model_code_error.h"
#include "estimator/model_context.h"

namespace est {
namespace {

// Runs the user's transform and puts back the gradients it gives, checking each.
void RunTransform(const GradientTransform& transform, const NamedTensors& variables, int64_t step) {
  std::vector<at::Tensor> gradients;
  gradients.reserve(variables.size());
  for (const auto& [name, variable] : variables) gradients.push_back(variable.grad());
  RunUserCode([&] { transform(variables, gradients); },
              [&] {
                EST_THROW(ModelError, "the gradient transform (EstimatorSpec::transform_gradients) failed at global "
                          "step ", step, ": ", DescribeCurrentException());
              });
  EST_CHECK(gradients.size() == variables.size(), ModelError, "the gradient transform left ", gradients.size(),
            " gradients for ", variables.size(), " variables; expected one per variable, in their order");
  for (size_t i = 0; i < variables.size(); ++i) {
    const auto& [name, variable] = variables[i];
    const at::Tensor& gradient = gradients[i];
    EST_CHECK(gradient.defined() && gradient.sizes() == variable.sizes() &&
                  gradient.scalar_type() == variable.scalar_type() && gradient.device() == variable.device(),
              ModelError, "the gradient transform gave variable '", name, "' a gradient of ",
              gradient.defined() ? Concat(gradient.scalar_type(), " ", gradient.sizes(), " on ",
                                          gradient.device())
                                 : std::string("nothing (undefined)"),
              "; expected ", variable.scalar_type(), " ", variable.sizes(), " on ", variable.device());
    if (!gradient.is_same(variable.grad())) variable.mutable_grad() = gradient;
  }
}

// Scales every gradient by clip_norm / global_norm where the global norm exceeds clip_norm;
// returns the global norm (float64, on the gradients' device). Computed without a host sync.
at::Tensor ClipByGlobalNorm(const NamedTensors& variables, double clip_norm) {
  std::vector<at::Tensor> squares;
  squares.reserve(variables.size());
  for (const auto& [name, variable] : variables)
    squares.push_back(at::linalg_vector_norm(variable.grad(), 2, {}, false, at::kDouble).square());
  if (squares.empty()) return {};
  const at::Tensor norm = at::stack(squares).sum().sqrt();
  // clip_norm / norm where that is below 1, else exactly 1; a norm that is not finite
  // leaves the gradients as they are (they are not finite either).
  const at::Tensor ratio = at::scalar_tensor(clip_norm, norm.options()).div(norm).clamp_max(1.0);
  const at::Tensor scale = at::where(at::isfinite(norm), ratio, at::ones_like(ratio));
  for (const auto& [name, variable] : variables) {
    at::Tensor gradient = variable.grad();
    gradient.mul_(scale.to(gradient.scalar_type()));
  }
  return norm;
}

}  // namespace

at::Tensor ClippedGlobalNorm(const at::Tensor& norm, double clip_norm) {
  return at::where(at::isfinite(norm), norm.clamp_max(clip_norm), norm);
}

bool ProcessesGradients(const EstimatorSpec& spec) {
  return spec.clip_norm || spec.clip_value || spec.gradient_transform;
}

void TransformGradients(const EstimatorSpec& spec, const ModelContext& ctx, int64_t step) {
  if (!spec.gradient_transform) return;
  torch::NoGradGuard no_grad;
  RunTransform(spec.gradient_transform, ctx.named_trainable_variables(), step);
}

at::Tensor ClipGradients(const EstimatorSpec& spec, const ModelContext& ctx) {
  if (!spec.clip_value && !spec.clip_norm) return {};
  const NamedTensors variables = ctx.named_trainable_variables();
  torch::NoGradGuard no_grad;
  if (spec.clip_value)
    for (const auto& [name, variable] : variables) variable.grad().clamp_(spec.clip_value->first, spec.clip_value->second);
  if (spec.clip_norm) return ClipByGlobalNorm(variables, *spec.clip_norm);
  return {};
}

}  // namespace est
