#include "distribute/input_context.h"

#include <string>

#include "common/error.h"

namespace est::distribute {

InputContext::InputContext(int num_input_pipelines, int input_pipeline_id, int num_replicas_in_sync)
    : num_input_pipelines_(num_input_pipelines),
      input_pipeline_id_(input_pipeline_id),
      num_replicas_in_sync_(num_replicas_in_sync) {
  EST_CHECK(num_input_pipelines > 0, ConfigError,
            "InputContext: num_input_pipelines must be positive, got ", num_input_pipelines);
  EST_CHECK(input_pipeline_id >= 0 && input_pipeline_id < num_input_pipelines, ConfigError,
            "InputContext: input_pipeline_id must be in [0, ", num_input_pipelines, "), got ",
            input_pipeline_id);
  EST_CHECK(num_replicas_in_sync > 0, ConfigError,
            "InputContext: num_replicas_in_sync must be positive, got ", num_replicas_in_sync);
}

int64_t InputContext::per_replica_batch_size(int64_t global_batch_size) const {
  EST_CHECK(global_batch_size > 0, ConfigError, "global batch size must be positive, got ",
            global_batch_size);
  const int64_t replicas = num_replicas_in_sync_;
  const int64_t below = global_batch_size / replicas * replicas;
  EST_CHECK(global_batch_size % replicas == 0, ConfigError, "InputContext::per_replica_batch_size: global batch size ",
            global_batch_size, " (the value input_fn passed; est-train's --batch-size) is not divisible by the ",
            replicas, " replicas in sync (every local replica of every worker): use a multiple of ", replicas,
            ", such as ", below > 0 ? std::to_string(below) + " or " : std::string(), below + replicas);
  return global_batch_size / num_replicas_in_sync_;
}

}  // namespace est::distribute
