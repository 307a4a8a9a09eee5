#include "apps/est_train/cluster_flags.h"

#include <utility>

#include "common/error.h"
#include "common/logging.h"
#include "distribute/cluster/cluster_address.h"
#include "distribute/cluster/cluster_resolver.h"

namespace est_train {

est::distribute::ClusterConfig ResolveClusterOfFlags(const std::string& chief_address, bool evaluator,
                                                     est::distribute::Environment env) {
  using est::ConfigError;
  namespace distribute = est::distribute;
  if (evaluator) {
    EST_CHECK(chief_address.empty(), ConfigError,
              "--chief-address names the training group's chief; the evaluator (--evaluator) connects to no one");
    try {
      const distribute::ClusterConfig resolved = distribute::ResolveCluster("", std::move(env));
      if (!resolved.is_local() && !resolved.is_evaluator())
        est::Log().info("--evaluator: running as the evaluator task, not as {} {} of the cluster from {}",
                        resolved.job(), resolved.task_id, resolved.source);
    } catch (const ConfigError& error) {
      est::Log().info("--evaluator: running as the evaluator task; the launcher's variables, which it does not "
                      "need, name no cluster ({})",
                      error.what());
    }
    // The training group's size and chief are unknown and unneeded: the evaluator reads checkpoints.
    return distribute::MakeClusterConfig({{"worker", {""}}}, "evaluator", 0, "--evaluator");
  }
  if (chief_address.empty()) return distribute::ResolveCluster("", std::move(env));
  const distribute::HostPort chief = distribute::ParseHostPort(chief_address, "--chief-address");
  // The flag stands for MASTER_ADDR and MASTER_PORT, which every ranked launcher's resolver reads.
  const distribute::Environment with_chief = [env = std::move(env), chief](const std::string& name) {
    if (name == "MASTER_ADDR") return std::optional<std::string>(chief.host);
    if (name == "MASTER_PORT") return std::optional<std::string>(std::to_string(chief.port));
    return env(name);
  };
  distribute::ClusterConfig resolved = distribute::ResolveCluster("", with_chief);
  const bool ranked = resolved.source == "torchrun" || resolved.source == "mpi" || resolved.source == "slurm";
  EST_CHECK(ranked, ConfigError, "--chief-address applies to ranks that torchrun, MPI or Slurm give; ",
            resolved.is_local() ? std::string("no launcher's variables describe a cluster (a local run)")
                                : resolved.source + " names the chief itself (" + resolved.chief_address + ")");
  est::Log().info("--chief-address: the chief is at {} (rank {} of {} from {})", resolved.chief_address, resolved.rank,
                  resolved.num_worker_replicas, resolved.source);
  return resolved;
}

}  // namespace est_train
