#pragma once
/// Gradient accumulation's part of a StepSync: the number of micro-batches checked, and the
/// gradients they summed turned into their mean. Internal to the strategies.

#include <cstdint>

#include "distribute/step_sync.h"

namespace est::distribute {

/// options.micro_batches; ConfigError when it is below 1.
int64_t CheckedMicroBatches(const StepSyncOptions& options);

/// Divides each gradient of `step`, summed over `micro_batches` micro-batches, by their number.
void AverageMicroBatches(const ReplicaStep& step, int64_t micro_batches);

}  // namespace est::distribute
