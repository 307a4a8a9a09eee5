#include "distribute/micro_batches.h"

#include <ATen/ATen.h>

#include "common/error.h"

namespace est::distribute {

int64_t CheckedMicroBatches(const StepSyncOptions& options) {
  EST_CHECK(options.micro_batches >= 1, ConfigError, "gradient accumulation needs at least 1 micro-batch, got ",
            options.micro_batches);
  return options.micro_batches;
}

void FinishLocalGradients(const ReplicaStep& step, int64_t micro_batches) {
  for (const at::Tensor& variable : step.variables) {
    if (!variable.grad().defined())
      variable.mutable_grad() = at::zeros_like(variable);
    else if (micro_batches > 1)
      variable.mutable_grad().div_(static_cast<double>(micro_batches));
  }
}

}  // namespace est::distribute
