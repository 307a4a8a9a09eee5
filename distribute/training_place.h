#pragma once
/// TrainingPlace: where a task stands among the workers that train, as a strategy across
/// processes reports it (num_workers(), worker_index(), is_chief()).

#include <optional>
#include <string>

#include "distribute/cluster/cluster_config.h"

namespace est::distribute {

/// This task's place among the workers that train.
struct TrainingPlace {
  int num_workers = 1;
  int worker_index = 0;
  bool is_chief = true;
};

/// The training tasks' places by rank; a ps or evaluator task trains with none (one worker,
/// index 0, not the chief).
TrainingPlace PlaceInTraining(const ClusterConfig& cluster);

/// `place`, or a ConfigError saying how strategy `strategy`, made without a cluster, gets one:
/// its options' `options_cluster`, or an Estimator's Strategy::configure().
const TrainingPlace& PlaceOrThrow(const std::optional<TrainingPlace>& place, const std::string& strategy,
                                  const char* options_cluster);

}  // namespace est::distribute
