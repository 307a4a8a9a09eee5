#include "apps/est_train/cluster_flags.h"

#include "common/error.h"
#include "common/logging.h"
#include "distribute/cluster/cluster_address.h"

namespace est_train {

est::distribute::ClusterConfig AmendCluster(est::distribute::ClusterConfig resolved, const std::string& chief_address,
                                            bool evaluator) {
  using est::ConfigError;
  if (evaluator) {
    EST_CHECK(chief_address.empty(), ConfigError,
              "--chief-address names the training group's chief; the evaluator (--evaluator) connects to no one");
    if (!resolved.is_local() && !resolved.is_evaluator())
      est::Log().info("--evaluator: running as the evaluator task, not as {} {} of the cluster from {}",
                      resolved.job(), resolved.task_id, resolved.source);
    // The training group's size and chief are unknown and unneeded: the evaluator reads checkpoints.
    return est::distribute::MakeClusterConfig({{"worker", {""}}}, "evaluator", 0, "--evaluator");
  }
  if (chief_address.empty()) return resolved;
  const bool ranked = resolved.source == "torchrun" || resolved.source == "mpi" || resolved.source == "slurm";
  EST_CHECK(ranked, ConfigError, "--chief-address applies to ranks that torchrun, MPI or Slurm give; ",
            resolved.is_local() ? std::string("no launcher's variables describe a cluster (a local run)")
                                : resolved.source + " names the chief itself (" + resolved.chief_address + ")");
  est::distribute::ParseHostPort(chief_address, "--chief-address");
  est::Log().info("--chief-address: the chief is at {} (not {}, as {} gives it)", chief_address,
                  resolved.chief_address, resolved.source);
  return est::distribute::MakeRankedClusterConfig(resolved.num_worker_replicas, resolved.rank, resolved.local_rank,
                                                  chief_address, resolved.source);
}

}  // namespace est_train
