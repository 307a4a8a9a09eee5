/// TorchrunClusterResolver (declared in distribute/cluster/cluster_resolver.h): torchrun's variables.

#include <utility>

#include "common/error.h"
#include "distribute/cluster/cluster_address.h"
#include "distribute/cluster/cluster_resolver.h"

namespace est::distribute {
namespace {

/// Reads the variables torchrun and Kubeflow's PyTorchJob set.
class TorchrunResolver : public ClusterResolver {
 public:
  explicit TorchrunResolver(Environment env) : env_(std::move(env)) {}
  std::string name() const override { return "torchrun"; }

  std::optional<ClusterConfig> resolve() const override {
    if (!env_("RANK") && !env_("WORLD_SIZE")) return std::nullopt;
    const int world_size = ReadRequiredIntVariable(env_, "WORLD_SIZE", 1);
    const int rank = ReadRequiredIntVariable(env_, "RANK", 0);
    EST_CHECK(rank < world_size, ConfigError, "environment variable RANK=\"", rank, "\" is not below WORLD_SIZE=\"",
              world_size, "\"");
    const int local_rank = ReadIntVariable(env_, "LOCAL_RANK", 0).value_or(0);
    std::optional<std::string> master_addr = env_("MASTER_ADDR");
    EST_CHECK(master_addr && !master_addr->empty(), ConfigError,
              "environment variable MASTER_ADDR is not set (RANK and WORLD_SIZE are, as torchrun sets them)");
    std::optional<std::string> master_port = env_("MASTER_PORT");
    EST_CHECK(master_port, ConfigError,
              "environment variable MASTER_PORT is not set (RANK and WORLD_SIZE are, as torchrun sets them)");
    const int port = ParsePort(*master_port, "environment variable MASTER_PORT=\"" + *master_port + "\"");
    const std::string chief_address = JoinHostPort(*master_addr, port);
    ParseHostPort(chief_address, "environment variable MASTER_ADDR=\"" + *master_addr + "\"");
    return MakeRankedClusterConfig(world_size, rank, local_rank, chief_address, name());
  }

 private:
  Environment env_;
};

}  // namespace

std::unique_ptr<ClusterResolver> TorchrunClusterResolver(Environment env) {
  return std::make_unique<TorchrunResolver>(std::move(env));
}

}  // namespace est::distribute
