#include "estimator/optimizer_step_in_parts.h"

#include <torch/optim/optimizer.h>

#include <utility>

#include "distribute/optimizer/optimizer_step.h"

namespace est {

void OptimizerStepInParts::part(const std::vector<at::Tensor>& parameters) {
  if (!in_parts_) return;
  std::unordered_set<const void*> now;
  for (const at::Tensor& parameter : parameters)
    if (!stepped_.count(parameter.unsafeGetTensorImpl())) now.insert(parameter.unsafeGetTensorImpl());
  if (now.empty()) return;
  const auto in_part = [&](const at::Tensor& parameter) { return now.count(parameter.unsafeGetTensorImpl()) > 0; };
  if (distribute::StepOptimizerFused(optimizer_, in_part)) {
    stepped_.insert(now.begin(), now.end());
  } else if (stepped_.empty()) {
    in_parts_ = false;  // not an optimizer that steps fused: rest() takes the whole step
  }
}

void OptimizerStepInParts::rest() {
  if (stepped_.empty()) return distribute::StepOptimizer(optimizer_, fuse_);
  const auto not_stepped = [&](const at::Tensor& parameter) {
    return stepped_.count(parameter.unsafeGetTensorImpl()) == 0;
  };
  if (distribute::StepOptimizerFused(optimizer_, not_stepped)) return;
  // Some parameter's layout changed since the first part: LibTorch's own Adam or AdamW step
  // (per-parameter state, parameters without a gradient skipped) on the others, the
  // gradients of those already updated hidden from it.
  std::vector<std::pair<at::Tensor, at::Tensor>> hidden;
  for (auto& group : optimizer_.param_groups())
    for (auto& parameter : group.params())
      if (!not_stepped(parameter) && parameter.grad().defined())
        hidden.emplace_back(parameter, std::exchange(parameter.mutable_grad(), at::Tensor()));
  optimizer_.step();
  for (auto& [parameter, grad] : hidden) parameter.mutable_grad() = std::move(grad);
}

}  // namespace est
