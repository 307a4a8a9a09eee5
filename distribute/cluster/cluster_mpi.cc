/// MpiClusterResolver (declared in distribute/cluster/cluster_resolver.h): the variables an MPI
/// launcher gives each rank (Open MPI's mpirun, MPICH's Hydra mpiexec, Cray MPICH).

#include <utility>

#include "common/error.h"
#include "distribute/cluster/cluster_address.h"
#include "distribute/cluster/cluster_resolver.h"
#include "distribute/cluster/cluster_slurm_nodelist.h"

namespace est::distribute {
namespace {

/// The variables of one launcher family: rank, world size, and the local rank and local size
/// (a second name, where there is one, is another launcher's of the family, read where the
/// first is not set).
struct LauncherVariables {
  const char* rank;
  const char* size;
  const char* local_rank[2];
  const char* local_size[2];
};

constexpr LauncherVariables kOpenMpi = {"OMPI_COMM_WORLD_RANK",
                                        "OMPI_COMM_WORLD_SIZE",
                                        {"OMPI_COMM_WORLD_LOCAL_RANK", nullptr},
                                        {"OMPI_COMM_WORLD_LOCAL_SIZE", nullptr}};
/// PMI's: MPICH's Hydra gives MPI_LOCALRANKID and MPI_LOCALNRANKS, Cray MPICH PMI_LOCAL_RANK
/// and PMI_LOCAL_SIZE.
constexpr LauncherVariables kPmi = {
    "PMI_RANK", "PMI_SIZE", {"MPI_LOCALRANKID", "PMI_LOCAL_RANK"}, {"MPI_LOCALNRANKS", "PMI_LOCAL_SIZE"}};

/// Reads the variables of an MPI launcher.
class MpiResolver : public ClusterResolver {
 public:
  explicit MpiResolver(Environment env) : env_(std::move(env)) {}
  std::string name() const override { return "mpi"; }

  std::optional<ClusterConfig> resolve() const override {
    const LauncherVariables* launcher =
        env_(kOpenMpi.rank) ? &kOpenMpi : env_(kPmi.rank) && env_(kPmi.size) ? &kPmi : nullptr;
    if (launcher == nullptr) return std::nullopt;
    const int world_size = ReadRequiredIntVariable(env_, launcher->size, 1);
    const int rank = ReadRequiredIntVariable(env_, launcher->rank, 0);
    EST_CHECK(rank < world_size, ConfigError, "environment variable ", launcher->rank, "=\"", rank,
              "\" is not below ", launcher->size, "=\"", world_size, "\"");
    // Where a launcher sets several rank variables (Open MPI's PMIx, Slurm's PMI-2), they must agree.
    for (const char* other : {kPmi.rank, "PMIX_RANK"}) {
      if (other == launcher->rank) continue;
      const std::optional<int> other_rank = ReadIntVariable(env_, other, 0);
      EST_CHECK(!other_rank || *other_rank == rank, ConfigError, "environment variables ", launcher->rank, "=\"", rank,
                "\" and ", other, "=\"", *other_rank, "\" give this process different MPI ranks");
    }
    const int local_rank = ReadFirstIntVariable(launcher->local_rank, 0).value_or(0);
    const std::optional<int> local_size = ReadFirstIntVariable(launcher->local_size, 1);
    return MakeRankedClusterConfig(world_size, rank, local_rank, chief_address(*launcher, world_size, local_size),
                                   name());
  }

 private:
  /// The first of `names` that is set, as an integer of at least `min`.
  std::optional<int> ReadFirstIntVariable(const char* const (&names)[2], int min) const {
    const char* name = env_(names[0]) || names[1] == nullptr ? names[0] : names[1];
    return ReadIntVariable(env_, name, min);
  }

  /// MASTER_ADDR; else this host when every rank runs on it; else the first host of the Slurm
  /// allocation mpirun runs in (rank 0 is placed there); at DefaultMasterPort's port.
  std::string chief_address(const LauncherVariables& launcher, int world_size, std::optional<int> local_size) const {
    const int port = DefaultMasterPort(env_);
    if (std::optional<std::string> master_addr = env_("MASTER_ADDR"); master_addr && !master_addr->empty()) {
      const std::string address = JoinHostPort(*master_addr, port);
      ParseHostPort(address, "environment variable MASTER_ADDR=\"" + *master_addr + "\"");
      return address;
    }
    if (local_size && *local_size == world_size) return JoinHostPort("127.0.0.1", port);
    for (const char* variable : {"SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
      std::optional<std::string> nodelist = env_(variable);
      if (!nodelist) continue;
      try {
        return JoinHostPort(ExpandSlurmNodelist(*nodelist).front(), port);
      } catch (const ConfigError& error) {
        EST_THROW(ConfigError, "environment variable ", variable, ": ", error.what());
      }
    }
    EST_THROW(ConfigError, "the ", world_size, " MPI ranks do not all run on this host (", launcher.local_size[0], "=",
              local_size ? "\"" + std::to_string(*local_size) + "\"" : std::string("unset"),
              ") and MASTER_ADDR is not set: give rank 0's host, e.g. mpirun -x MASTER_ADDR=<host>");
  }

  Environment env_;
};

}  // namespace

std::unique_ptr<ClusterResolver> MpiClusterResolver(Environment env) {
  return std::make_unique<MpiResolver>(std::move(env));
}

}  // namespace est::distribute
