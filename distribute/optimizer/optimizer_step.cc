#include "distribute/optimizer/optimizer_step.h"

#include <torch/optim/optimizer.h>

#include "common/config.h"

#if EST_WITH_KERNELS
#include "kernels/fused_adam.h"
#endif

namespace est::distribute {

void StepOptimizer(torch::optim::Optimizer& optimizer, bool fuse) {
  if (!fuse || !StepOptimizerFused(optimizer)) optimizer.step();
}

bool StepOptimizerFused(torch::optim::Optimizer& optimizer, const ParameterFilter& include) {
#if EST_WITH_KERNELS
  return kernels::FusedAdamStep(optimizer, include);
#else
  (void)optimizer;
  (void)include;
  return false;
#endif
}

}  // namespace est::distribute
