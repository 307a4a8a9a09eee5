#include "estimator/optimizer_groups.h"

#include <torch/optim/optimizer.h>

#include <unordered_map>

#include "common/error.h"
#include "estimator/model_context.h"

namespace est {

std::string OptimizerName(const torch::optim::Optimizer* optimizer, const ModelContext& ctx) {
  for (const auto& [name, created] : ctx.optimizers())
    if (created == optimizer) return name;
  return "";
}

void CheckOptimizerGroups(const std::vector<torch::optim::Optimizer*>& optimizers, const ModelContext& ctx) {
  const NamedTensors variables = ctx.named_trainable_variables();
  std::unordered_map<const void*, const std::string*> names;
  for (const auto& [name, variable] : variables) names.emplace(variable.unsafeGetTensorImpl(), &name);
  std::unordered_map<const void*, const torch::optim::Optimizer*> stepped_by;
  for (const torch::optim::Optimizer* optimizer : optimizers)
    for (const auto& group : optimizer->param_groups())
      for (const auto& parameter : group.params()) {
        const auto [found, first] = stepped_by.emplace(parameter.unsafeGetTensorImpl(), optimizer);
        const auto name = names.find(parameter.unsafeGetTensorImpl());
        EST_CHECK(first || found->second == optimizer, ModelError, "trainable variable '",
                  name == names.end() ? std::string("(not a ModelContext variable)") : *name->second,
                  "' is stepped by two optimizers, '", OptimizerName(found->second, ctx), "' and '",
                  OptimizerName(optimizer, ctx), "'; give each variable to one optimizer");
      }
  for (const auto& [name, variable] : variables) {
    if (stepped_by.count(variable.unsafeGetTensorImpl())) continue;
    std::string listed;
    for (const torch::optim::Optimizer* optimizer : optimizers)
      listed += (listed.empty() ? "'" : ", '") + OptimizerName(optimizer, ctx) + "'";
    EST_THROW(ModelError, "trainable variable '", name, "' is stepped by none of the optimizers ", listed,
              " of the training EstimatorSpec; give it to one of them (or set requires_grad(false) to freeze it)");
  }
}

}  // namespace est
