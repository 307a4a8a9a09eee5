#pragma once
/// est-train's flags that amend the cluster the environment describes: --chief-address and
/// --evaluator.

#include <string>

#include "distribute/cluster/cluster_config.h"
#include "distribute/cluster/cluster_environment.h"

namespace est_train {

/// The cluster of this process as the environment (TF_CONFIG, torchrun, MPI or Slurm) and the
/// flags describe it together:
/// - `evaluator`: this process is the evaluator task, which follows --model-dir's checkpoints
///   and is outside the training group, whatever ranks the launcher gave it (an evaluator step
///   of a Slurm job, a separate mpirun). The launcher's variables are not needed, and a set of
///   them that does not resolve (MPI ranks without MASTER_ADDR) is no error. A TF_CONFIG
///   evaluator task needs no flag.
/// - `chief_address` ("host:port", empty for none): the training group's chief, where the
///   rendezvous store listens, for launchers that name only ranks (torchrun, MPI, Slurm): it
///   stands for MASTER_ADDR and MASTER_PORT, so ranks whose launcher names no chief resolve.
/// Throws ConfigError for --chief-address with a TF_CONFIG cluster (which names its chief), a
/// local run, or the evaluator, for an address that is not "host:port", and as ResolveCluster.
est::distribute::ClusterConfig ResolveClusterOfFlags(const std::string& chief_address, bool evaluator,
                                                     est::distribute::Environment env =
                                                         est::distribute::ProcessEnvironment());

}  // namespace est_train
