#pragma once
/// Several optimizers in one training step: every trainable variable must be stepped by
/// exactly one of them. Internal to the estimator.

#include <string>
#include <vector>

namespace torch::optim {
class Optimizer;
}

namespace est {

class ModelContext;

/// Throws a ModelError naming the first trainable variable of `ctx` that none of `optimizers`
/// steps, or that two of them step, and the optimizers by their ModelContext names.
void CheckOptimizerGroups(const std::vector<torch::optim::Optimizer*>& optimizers, const ModelContext& ctx);

/// The ModelContext name of `optimizer` ("" when `ctx` did not create it).
std::string OptimizerName(const torch::optim::Optimizer* optimizer, const ModelContext& ctx);

}  // namespace est
