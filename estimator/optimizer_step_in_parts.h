#pragma once
/// OptimizerStepInParts: one optimizer step taken in parts, the variables whose gradients are
/// final first (while the others are still being all-reduced), the rest at the end.

#include <ATen/core/Tensor.h>

#include <unordered_set>
#include <vector>

namespace torch::optim {
class Optimizer;
}

namespace est {

/// One step of `optimizer`, where `fuse` (RunConfig::fused_optimizer_step) and it steps fused
/// (distribute::StepOptimizerFused): part() updates some parameters at once, rest() the others. Each
/// parameter is updated once, by the same arithmetic as a whole step, so the results are those
/// of distribute::StepOptimizer to the bit. Where it cannot step fused, part() does nothing and rest()
/// takes the whole step. Make one per training step.
class OptimizerStepInParts {
 public:
  OptimizerStepInParts(torch::optim::Optimizer& optimizer, bool fuse) : optimizer_(optimizer), fuse_(fuse), in_parts_(fuse) {}

  /// Updates `parameters` (of the optimizer, their gradients final) now, where the step goes
  /// in parts; a parameter named before is not updated again.
  void part(const std::vector<at::Tensor>& parameters);
  /// Updates every parameter no part() updated: the whole step when none did.
  void rest();

 private:
  torch::optim::Optimizer& optimizer_;
  const bool fuse_;
  bool in_parts_;  ///< false once a part could not step fused before any could
  std::unordered_set<const void*> stepped_;  ///< TensorImpls part() updated
};

}  // namespace est
