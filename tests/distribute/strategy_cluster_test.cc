// The cluster is resolved once, by RunConfig, and handed to the strategies (configure()):
// a strategy made without one adopts it, one made with its own checks that both agree.

#include <catch2/catch.hpp>

#include <string>

#include "common/error.h"
#include "distribute/multi_worker_mirrored_strategy.h"
#include "distribute/parameter_server_strategy.h"
#include "tests/test_util.h"

namespace est::distribute {
namespace {

// Task `type`:`index` of a chief, two workers and (with `ps`) one ps task, on ports nothing
// listens on (no test here connects).
ClusterConfig Cluster(const std::string& type, int index, bool ps = false) {
  ClusterSpec spec = {{"chief", {"127.0.0.1:9"}}, {"worker", {"127.0.0.1:10", "127.0.0.1:11"}}};
  if (ps) spec["ps"] = {"127.0.0.1:12"};
  return MakeClusterConfig(spec, type, index, "explicit");
}

TEST_CASE("a MultiWorkerMirroredStrategy made without a cluster takes its place from configure()",
          "[distribute]") {
  MultiWorkerMirroredStrategy strategy;
  CHECK_THROWS_MATCHES(strategy.num_workers(), ConfigError,
                       testing::MessageMatches(Catch::Equals(
                           "MultiWorkerMirroredStrategy has no cluster yet: set MultiWorkerOptions::cluster, or give "
                           "the strategy to an Estimator (RunConfig::train_distribute), which hands it "
                           "RunConfig::cluster")));
  CHECK_THROWS_AS(strategy.cluster(), ConfigError);
  strategy.configure(Cluster("worker", 1));
  CHECK(strategy.num_workers() == 3);
  CHECK(strategy.worker_index() == 2);
  CHECK_FALSE(strategy.is_chief());
  CHECK(strategy.num_replicas_in_sync() == 3);
  CHECK(strategy.cluster().chief_address == "127.0.0.1:9");
  CHECK_FALSE(strategy.options().job_id().empty());  // derived from the chief's address
  strategy.configure(Cluster("worker", 1));            // the same cluster again: agreed
  CHECK(strategy.worker_index() == 2);
}

TEST_CASE("a strategy made with a cluster refuses another from configure(), naming both", "[distribute]") {
  MultiWorkerMirroredStrategy strategy(MultiWorkerOptions().cluster(Cluster("worker", 0)));
  CHECK(strategy.worker_index() == 1);
  CHECK_NOTHROW(strategy.configure(Cluster("worker", 0)));
  CHECK_THROWS_MATCHES(
      strategy.configure(Cluster("chief", 0)), ConfigError,
      testing::MessageMatches(Catch::Equals(
          "the cluster of MultiWorkerOptions is task worker 0 of {\"chief\": [\"127.0.0.1:9\"], \"worker\": "
          "[\"127.0.0.1:10\", \"127.0.0.1:11\"]} (explicit), but RunConfig::cluster is task chief 0 of {\"chief\": "
          "[\"127.0.0.1:9\"], \"worker\": [\"127.0.0.1:10\", \"127.0.0.1:11\"]} (explicit); resolve the cluster "
          "once: leave the strategy's cluster unset (the Estimator hands it RunConfig::cluster) or give both the "
          "same ClusterConfig")));
  CHECK_THROWS_MATCHES(strategy.configure(ClusterConfig{}), ConfigError,
                       testing::MessageMatches(Catch::Contains("but RunConfig::cluster is a local run")));
  CHECK(strategy.worker_index() == 1);
}

TEST_CASE("a ParameterServerStrategy made without a cluster checks its options once configure() gives one",
          "[distribute]") {
  ParameterServerStrategy strategy(ParameterServerOptions().replicas_to_aggregate(2));
  CHECK_THROWS_MATCHES(strategy.is_chief(), ConfigError,
                       testing::MessageMatches(Catch::StartsWith("ParameterServerStrategy has no cluster yet")));
  CHECK_THROWS_MATCHES(strategy.configure(Cluster("worker", 0)), ConfigError,
                       testing::MessageMatches(Catch::StartsWith("ParameterServerStrategy: explicit has no 'ps' job")));
  strategy.configure(Cluster("chief", 0, /*ps=*/true));
  CHECK(strategy.is_chief());
  CHECK(strategy.num_workers() == 3);
  CHECK(strategy.options().placement().num_ps() == 1);
  CHECK(strategy.options().total_num_replicas() == 3);
  CHECK_THROWS_MATCHES(strategy.configure(Cluster("worker", 1, /*ps=*/true)), ConfigError,
                       testing::MessageMatches(Catch::StartsWith(
                           "the cluster of ParameterServerOptions is task chief 0 of")));
  ParameterServerStrategy ps_task;
  ps_task.configure(Cluster("ps", 0, /*ps=*/true));
  CHECK_FALSE(ps_task.is_chief());
  CHECK(ps_task.num_workers() == 1);
}

}  // namespace
}  // namespace est::distribute
