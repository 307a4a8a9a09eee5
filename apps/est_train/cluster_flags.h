#pragma once
/// est-train's flags that amend the cluster the environment describes: --chief-address and
/// --evaluator.

#include <string>

#include "distribute/cluster/cluster_config.h"

namespace est_train {

/// `resolved` (from TF_CONFIG, torchrun, MPI or Slurm) as the flags amend it:
/// - `evaluator`: this process is the evaluator task, which follows --model-dir's checkpoints
///   and is outside the training group, whatever ranks the launcher gave it (an evaluator step
///   of a Slurm job, a separate mpirun). A TF_CONFIG evaluator task needs no flag.
/// - `chief_address` ("host:port", empty for none): the training group's chief, where the
///   rendezvous store listens, for launchers that name only ranks (torchrun, MPI, Slurm).
/// Throws ConfigError for --chief-address with a TF_CONFIG cluster (which names its chief), a
/// local run, or the evaluator, and for an address that is not "host:port".
est::distribute::ClusterConfig AmendCluster(est::distribute::ClusterConfig resolved, const std::string& chief_address,
                                            bool evaluator);

}  // namespace est_train
