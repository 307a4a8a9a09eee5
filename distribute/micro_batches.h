#pragma once
/// A replica's own part of StepSync::finish: the number of micro-batches checked, and the
/// gradients they summed turned into those to apply. Internal to the strategies.

#include <cstdint>

#include "distribute/step_sync.h"

namespace est::distribute {

/// options.micro_batches; ConfigError when it is below 1.
int64_t CheckedMicroBatches(const StepSyncOptions& options);

/// Divides each gradient of `step`, summed over `micro_batches` micro-batches, by their
/// number, and gives each variable that backward left without a gradient zeros.
void FinishLocalGradients(const ReplicaStep& step, int64_t micro_batches);

}  // namespace est::distribute
