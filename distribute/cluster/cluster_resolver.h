#pragma once
/// Cluster resolvers: the sources of a ClusterConfig (TF_CONFIG, torchrun, MPI, Slurm) and the
/// order in which ResolveCluster consults them.

#include <memory>
#include <optional>
#include <string>

#include "distribute/cluster/cluster_config.h"
#include "distribute/cluster/cluster_environment.h"

namespace est::distribute {

/// A source of cluster configuration, as tf.distribute.cluster_resolver.ClusterResolver.
class ClusterResolver {
 public:
  virtual ~ClusterResolver() = default;
  /// The source's name, as ClusterConfig::source gives it ("TF_CONFIG", "torchrun", "mpi", "slurm").
  virtual std::string name() const = 0;
  /// The configuration, or nullopt when this source is not present in the environment.
  /// Throws ConfigError naming the variable when a value is malformed.
  virtual std::optional<ClusterConfig> resolve() const = 0;
};

/// TF_CONFIG, parsed by ParseTfConfig; present when the variable is set and not empty, even
/// when it describes a local run ("{}").
std::unique_ptr<ClusterResolver> TfConfigClusterResolver(Environment env = ProcessEnvironment());

/// The variables torchrun and Kubeflow's PyTorchJob set: RANK, WORLD_SIZE, MASTER_ADDR,
/// MASTER_PORT and, optionally, LOCAL_RANK. Present when RANK or WORLD_SIZE is set; then
/// all four are required (as torch.distributed's env:// does), with 0 <= RANK < WORLD_SIZE
/// and MASTER_PORT in [1, 65535]. Every rank is a "worker" with task_id RANK; rank 0 is the
/// chief, at MASTER_ADDR:MASTER_PORT. MASTER_ADDR and MASTER_PORT alone do not make it
/// present (Slurm jobs set them for the Slurm resolver).
std::unique_ptr<ClusterResolver> TorchrunClusterResolver(Environment env = ProcessEnvironment());

/// The variables an MPI launcher gives each rank: Open MPI's mpirun (OMPI_COMM_WORLD_RANK,
/// _SIZE, _LOCAL_RANK, _LOCAL_SIZE), or PMI's (PMI_RANK, PMI_SIZE) with MPICH's Hydra mpiexec
/// (MPI_LOCALRANKID, MPI_LOCALNRANKS) or Cray MPICH (PMI_LOCAL_RANK, PMI_LOCAL_SIZE). Present
/// when OMPI_COMM_WORLD_RANK is set (then OMPI_COMM_WORLD_SIZE is required), or PMI_RANK and
/// PMI_SIZE both. PMI_RANK and PMIX_RANK, where set beside Open MPI's, must
/// agree with its rank. Every rank is a "worker" with task_id its rank; rank 0 is the chief, at
/// MASTER_ADDR, or 127.0.0.1 when every rank runs on this host (the local size equals the
/// world size), or the first host of SLURM_JOB_NODELIST (mpirun in a Slurm allocation places
/// rank 0 there); otherwise a ConfigError asks for MASTER_ADDR. The port is DefaultMasterPort's:
/// MASTER_PORT, else one derived from SLURM_JOB_ID inside a Slurm job, else 29500.
std::unique_ptr<ClusterResolver> MpiClusterResolver(Environment env = ProcessEnvironment());

/// The variables of a Slurm task (run it under srun): SLURM_PROCID (the rank), SLURM_NTASKS
/// (the number of ranks), SLURM_LOCALID (the local rank, optional) and SLURM_NODELIST
/// (SLURM_JOB_NODELIST when unset), whose first host runs rank 0, the chief. The chief's host
/// is MASTER_ADDR where set, else that first host; its port is DefaultMasterPort's
/// (MASTER_PORT, else 15000 + the last four digits of SLURM_JOB_ID). Present when
/// SLURM_PROCID and SLURM_NTASKS are both set. Every rank is a "worker" with task_id
/// SLURM_PROCID.
std::unique_ptr<ClusterResolver> SlurmClusterResolver(Environment env = ProcessEnvironment());

/// The cluster this process belongs to. `explicit_tf_config` (TF_CONFIG JSON from a flag or a
/// program) wins when not empty (source "explicit"); otherwise the first source present, in
/// order TF_CONFIG, torchrun, MPI, Slurm (MPI before Slurm: ranks that mpirun starts inside a
/// Slurm allocation inherit Slurm's variables of the batch step, which do not describe them);
/// otherwise a local run (source "local"). A TF_CONFIG of "{}" is present and gives a local
/// run. A later source that is malformed does not matter, and one that describes another
/// cluster is logged as a warning naming both. Logs the source used at info level.
/// Throws ConfigError from the source used.
ClusterConfig ResolveCluster(const std::string& explicit_tf_config = "", Environment env = ProcessEnvironment());

}  // namespace est::distribute
