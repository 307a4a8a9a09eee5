/// SlurmClusterResolver (declared in distribute/cluster/cluster_resolver.h): a Slurm task's variables.

#include <utility>

#include "common/error.h"
#include "distribute/cluster/cluster_address.h"
#include "distribute/cluster/cluster_resolver.h"
#include "distribute/cluster/cluster_slurm_nodelist.h"

namespace est::distribute {
namespace {

/// Reads the variables of a Slurm task.
class SlurmResolver : public ClusterResolver {
 public:
  explicit SlurmResolver(Environment env) : env_(std::move(env)) {}
  std::string name() const override { return "slurm"; }

  std::optional<ClusterConfig> resolve() const override {
    if (!env_("SLURM_PROCID") || !env_("SLURM_NTASKS")) return std::nullopt;
    const int world_size = ReadRequiredIntVariable(env_, "SLURM_NTASKS", 1);
    const int rank = ReadRequiredIntVariable(env_, "SLURM_PROCID", 0);
    EST_CHECK(rank < world_size, ConfigError, "environment variable SLURM_PROCID=\"", rank,
              "\" is not below SLURM_NTASKS=\"", world_size, "\"");
    const int local_rank = ReadIntVariable(env_, "SLURM_LOCALID", 0).value_or(0);
    std::string variable = "SLURM_NODELIST";
    std::optional<std::string> nodelist = env_(variable);
    if (!nodelist) nodelist = env_(variable = "SLURM_JOB_NODELIST");
    EST_CHECK(nodelist, ConfigError,
              "neither SLURM_NODELIST nor SLURM_JOB_NODELIST is set (SLURM_PROCID and SLURM_NTASKS are)");
    std::string first_host;
    try {
      first_host = ExpandSlurmNodelist(*nodelist).front();
    } catch (const ConfigError& error) {
      EST_THROW(ConfigError, "environment variable ", variable, ": ", error.what());
    }
    // A job script's MASTER_ADDR wins over the node list, as in PyTorch Lightning.
    const std::optional<std::string> master_addr = env_("MASTER_ADDR");
    const bool by_script = master_addr && !master_addr->empty();
    const std::string chief_address = JoinHostPort(by_script ? *master_addr : first_host, DefaultMasterPort(env_));
    if (by_script) ParseHostPort(chief_address, "environment variable MASTER_ADDR=\"" + *master_addr + "\"");
    return MakeRankedClusterConfig(world_size, rank, local_rank, chief_address, name());
  }

 private:
  Environment env_;
};

}  // namespace

std::unique_ptr<ClusterResolver> SlurmClusterResolver(Environment env) {
  return std::make_unique<SlurmResolver>(std::move(env));
}

}  // namespace est::distribute
