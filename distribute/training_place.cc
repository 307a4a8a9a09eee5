#include "distribute/training_place.h"

#include "common/error.h"

namespace est::distribute {

TrainingPlace PlaceInTraining(const ClusterConfig& cluster) {
  if (cluster.is_evaluator() || cluster.is_ps()) return {1, 0, false};
  return {cluster.num_worker_replicas, cluster.rank, cluster.is_chief};
}

const TrainingPlace& PlaceOrThrow(const std::optional<TrainingPlace>& place, const std::string& strategy,
                                  const char* options_cluster) {
  EST_CHECK(place.has_value(), ConfigError, strategy, " has no cluster yet: set ", options_cluster,
            ", or give the strategy to an Estimator (RunConfig::train_distribute), which hands it RunConfig::cluster");
  return *place;
}

}  // namespace est::distribute
