#pragma once
/// How the framework steps an optimizer, model_fn's and a ps task's alike: the fused Adam step
/// of the kernels (est::kernels::FusedAdamStep, built with EST_WITH_KERNELS) where asked and
/// where it applies, else the optimizer's own step(). Internal to the framework.

#include <functional>

namespace at {
class Tensor;
}
namespace torch::optim {
class Optimizer;
}

namespace est::distribute {

/// Which of an optimizer's parameters a step updates; empty: all of them.
using ParameterFilter = std::function<bool(const at::Tensor& parameter)>;

/// Steps `optimizer`: fused where `fuse` (RunConfig::fused_optimizer_step) and
/// StepOptimizerFused can, else by its own step(). The results are the same to the bit.
void StepOptimizer(torch::optim::Optimizer& optimizer, bool fuse);

/// Steps the parameters of `optimizer` that `include` accepts (every one when it is empty) in
/// the kernels' fused pass and returns true, where the kernels are built and the fused step
/// applies to `optimizer`; otherwise returns false, having changed nothing.
bool StepOptimizerFused(torch::optim::Optimizer& optimizer, const ParameterFilter& include = {});

}  // namespace est::distribute
