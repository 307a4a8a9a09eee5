#include "estimator/replica_set.h"

#include <torch/types.h>

#include "common/error.h"
#include "distribute/cluster/cluster_config.h"
#include "distribute/replica_group.h"
#include "distribute/strategy.h"

namespace est {

ReplicaSet::ReplicaSet(distribute::Strategy& strategy, std::shared_ptr<const nlohmann::json> params,
                       ModelContext::Initializers restore, VariablesInitializer initialize_from_training,
                       ChannelsLast channels_last, const distribute::ClusterConfig* cluster) {
  const std::vector<c10::Device> devices = strategy.local_devices();
  const int workers = strategy.model_collective_workers();
  group_ = std::make_unique<distribute::ReplicaGroup>(
      static_cast<int>(devices.size()), workers, workers > 1 ? strategy.worker_index() : 0,
      [&strategy]() -> distribute::Collective& { return strategy.model_collective(); });
  for (size_t i = 0; i < devices.size(); ++i) {
    replicas_.push_back(std::make_unique<ModelContext>(
        params, devices[i], initializers_for(static_cast<int>(i), restore, initialize_from_training),
        UsesChannelsLast(channels_last, devices[i])));
    replicas_.back()->set_replica_context(ReplicaContext(group_.get(), static_cast<int>(i),
                                                         cluster ? cluster->job() : std::string(),
                                                         cluster ? cluster->task_id : 0));
  }
}

ReplicaSet::~ReplicaSet() = default;

ModelContext::Initializers ReplicaSet::initializers_for(int index, const ModelContext::Initializers& restore,
                                                        VariablesInitializer initialize_from_training) {
  ModelContext::Initializers initializers;
  initializers.optimizer = restore.optimizer;
  if (index == 0) {
    initializers.variables = [restore = restore.variables, initialize_from_training](const NamedTensors& variables) {
      if (restore) restore(variables);
      if (initialize_from_training) initialize_from_training(variables);
    };
  } else {
    initializers.variables = [this, index](const NamedTensors& variables) {
      const NamedTensors first = replica(0).variables();
      torch::NoGradGuard no_grad;
      for (auto [name, tensor] : variables) {
        auto it = std::find_if(first.begin(), first.end(), [&name = name](const auto& entry) { return entry.first == name; });
        EST_CHECK(it != first.end(), ModelError, "replica ", index, " created variable '", name, "', which replica 0 does not have: model_fn must create the same "
                  "state on every replica (before the same collectives of its replica context)");
        EST_CHECK(it->second.sizes() == tensor.sizes(), ModelError, "variable '", name, "' has shape ",
                  tensor.sizes(), " on replica ", index, " and ", it->second.sizes(), " on replica 0");
        tensor.copy_(it->second);
      }
    };
  }
  return initializers;
}

}  // namespace est
