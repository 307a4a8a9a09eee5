// print_cluster: the cluster its environment describes (ResolveCluster), as one JSON line on
// stdout; a ConfigError's message on stderr with exit status 1. The Kubernetes manifests' test
// runs it with the environment each operator gives a replica.

#include <iostream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "distribute/cluster/cluster_resolver.h"

int main() {
  try {
    const est::distribute::ClusterConfig config = est::distribute::ResolveCluster();
    const nlohmann::json printed = {{"source", config.source},
                                    {"job", config.job()},
                                    {"task_id", config.task_id},
                                    {"rank", config.rank},
                                    {"is_chief", config.is_chief},
                                    {"num_worker_replicas", config.num_worker_replicas},
                                    {"chief_address", config.chief_address},
                                    {"task_address", config.task_address},
                                    {"cluster", config.cluster}};
    std::cout << printed.dump() << "\n";
    return 0;
  } catch (const est::Error& error) {
    std::cerr << error.what() << "\n";
    return 1;
  }
}
