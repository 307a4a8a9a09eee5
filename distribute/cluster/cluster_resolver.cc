#include "distribute/cluster/cluster_resolver.h"

#include <utility>
#include <vector>

#include "common/error.h"
#include "common/logging.h"

namespace est::distribute {
namespace {

/// Reads the TF_CONFIG variable.
class TfConfigResolver : public ClusterResolver {
 public:
  explicit TfConfigResolver(Environment env) : env_(std::move(env)) {}
  std::string name() const override { return "TF_CONFIG"; }
  std::optional<ClusterConfig> resolve() const override {
    std::optional<std::string> tf_config = env_("TF_CONFIG");
    if (!tf_config || tf_config->empty()) return std::nullopt;
    return ParseTfConfig(*tf_config);
  }

 private:
  Environment env_;
};

/// One line for the log: which task this is and where its chief is.
std::string Describe(const ClusterConfig& config) {
  std::string text = "task " + config.job() + ":" + std::to_string(config.task_id);
  if (config.rank >= 0) {
    text += ", rank " + std::to_string(config.rank) + " of " + std::to_string(config.num_worker_replicas);
  } else {
    text += ", outside the training group of " + std::to_string(config.num_worker_replicas);
  }
  return text + (config.is_chief ? " (chief)" : "") + ", chief at " + config.chief_address;
}

/// Warns when a source consulted after `winner` (the one that resolved the cluster) also
/// describes one, and another: "TF_CONFIG (…) and torchrun's variables (…) disagree; TF_CONFIG wins".
void WarnOfDisagreement(const ClusterConfig& winner, const std::vector<std::unique_ptr<ClusterResolver>>& resolvers,
                        size_t first_other) {
  for (size_t i = first_other; i < resolvers.size(); ++i) {
    std::optional<ClusterConfig> other;
    try {
      other = resolvers[i]->resolve();
    } catch (const Error& error) {
      Log().warn("{} wins over {}'s variables, which are malformed too: {}", winner.source, resolvers[i]->name(),
                 error.what());
      continue;
    }
    if (!other) continue;
    const bool same_rank = winner.rank < 0 || winner.rank == other->rank;
    if (same_rank && winner.num_worker_replicas == other->num_worker_replicas &&
        winner.chief_address == other->chief_address) {
      continue;
    }
    Log().warn("{} ({}) and {}'s variables ({}) describe different clusters; {} wins", winner.source,
               Describe(winner), other->source, Describe(*other), winner.source);
  }
}

}  // namespace

std::unique_ptr<ClusterResolver> TfConfigClusterResolver(Environment env) {
  return std::make_unique<TfConfigResolver>(std::move(env));
}

ClusterConfig ResolveCluster(const std::string& explicit_tf_config, Environment env) {
  std::optional<ClusterConfig> config;
  if (!explicit_tf_config.empty()) {
    config = ParseTfConfig(explicit_tf_config);
    config->source = "explicit";
  } else {
    std::vector<std::unique_ptr<ClusterResolver>> resolvers;
    resolvers.push_back(TfConfigClusterResolver(env));
    resolvers.push_back(TorchrunClusterResolver(env));
    resolvers.push_back(MpiClusterResolver(env));
    resolvers.push_back(SlurmClusterResolver(env));
    size_t winner = 0;
    for (; winner < resolvers.size(); ++winner) {
      if ((config = resolvers[winner]->resolve())) break;
    }
    if (config && !config->is_local()) WarnOfDisagreement(*config, resolvers, winner + 1);
  }
  if (!config) {
    Log().debug("No TF_CONFIG, torchrun, MPI or Slurm variables: running locally");
    return ClusterConfig();
  }
  if (config->is_local()) {
    Log().info("{} TF_CONFIG has no cluster: running locally", config->source == "explicit" ? "The explicit" : "The");
    return *config;
  }
  Log().info("Cluster configuration from {}: {}", config->source, Describe(*config));
  return *config;
}

}  // namespace est::distribute
