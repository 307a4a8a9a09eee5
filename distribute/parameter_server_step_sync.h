#pragma once
/// The step seam of ParameterServerStrategy. Internal to distribute/.

#include <memory>

#include "distribute/step_sync.h"

namespace est::distribute {

class PsConnection;

/// A step that synchronizes nothing across workers (its gradients are averaged over its
/// micro-batches), over variables that live on the ps tasks: apply() pushes the worker's
/// gradients to them, which apply them, and pulls the new values into the worker's replica. The chief initializes the ps tasks at its first
/// step unless they hold variables already; other workers (and a restarted chief) take the
/// ps tasks' values when model_fn creates its variables. Before a checkpoint the chief pulls
/// the values and optimizer state into its replica.
/// When a ps task restarted empty, the chief restores every ps task from the latest
/// checkpoint (options.restore_latest_checkpoint) and the others wait for it, then the step
/// goes on.
TrainingSync CreateParameterServerSync(std::shared_ptr<PsConnection> connection, bool is_chief,
                                       const StepSyncOptions& options);

}  // namespace est::distribute
