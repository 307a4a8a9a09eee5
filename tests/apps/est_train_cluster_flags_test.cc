// est-train's --chief-address and --evaluator, resolved with the launcher's variables.

#include "apps/est_train/cluster_flags.h"

#include <catch2/catch.hpp>

#include "common/error.h"
#include "tests/log_capture.h"
#include "tests/test_util.h"

namespace est_train_cluster_flags_test {
using est::distribute::EnvironmentOf;
using est_train::ResolveClusterOfFlags;

namespace {
// Rank 1 of 4 started by mpirun on two hosts (2 ranks each), which names no chief.
const std::map<std::string, std::string> kMpiAcrossHosts = {{"OMPI_COMM_WORLD_RANK", "1"},
                                                           {"OMPI_COMM_WORLD_SIZE", "4"},
                                                           {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                                           {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}};
}  // namespace

TEST_CASE("--chief-address gives the chief to ranks whose launcher names none", "[apps]") {
  // Without the flag the ranks cannot resolve.
  CHECK_THROWS_MATCHES(ResolveClusterOfFlags("", false, EnvironmentOf(kMpiAcrossHosts)), est::ConfigError,
                       est::testing::MessageMatches(Catch::Contains("MASTER_ADDR is not set")));
  const est::distribute::ClusterConfig mpi =
      ResolveClusterOfFlags("10.0.0.1:29400", false, EnvironmentOf(kMpiAcrossHosts));
  CHECK(mpi.source == "mpi");
  CHECK(mpi.chief_address == "10.0.0.1:29400");
  CHECK(mpi.rank == 1);
  CHECK(mpi.num_worker_replicas == 4);
  CHECK(mpi.local_rank == 1);
  // torchrun's variables without MASTER_ADDR and MASTER_PORT; and with others, which the flag overrides.
  const est::distribute::ClusterConfig torchrun =
      ResolveClusterOfFlags("node0:1234", false, EnvironmentOf({{"RANK", "2"}, {"WORLD_SIZE", "3"}}));
  CHECK(torchrun.source == "torchrun");
  CHECK(torchrun.chief_address == "node0:1234");
  CHECK(torchrun.rank == 2);
  CHECK(ResolveClusterOfFlags("node0:1234", false,
                              EnvironmentOf({{"RANK", "2"}, {"WORLD_SIZE", "3"}, {"MASTER_ADDR", "other"},
                                             {"MASTER_PORT", "9"}}))
            .chief_address == "node0:1234");
  // TF_CONFIG names its chief; a local run has none to amend.
  CHECK_THROWS_MATCHES(
      ResolveClusterOfFlags("10.0.0.1:29400", false,
                            EnvironmentOf({{"TF_CONFIG", R"({"cluster": {"worker": ["a:1", "b:2"]}, "task": )"
                                                         R"({"type": "worker", "index": 1}})"}})),
      est::ConfigError,
      est::testing::MessageMatches(Catch::Equals("--chief-address applies to ranks that torchrun, MPI or Slurm give; "
                                                 "TF_CONFIG names the chief itself (a:1)")));
  CHECK_THROWS_MATCHES(ResolveClusterOfFlags("10.0.0.1:29400", false, EnvironmentOf({})), est::ConfigError,
                       est::testing::MessageMatches(Catch::EndsWith("no launcher's variables describe a cluster (a "
                                                                    "local run)")));
}

TEST_CASE("--evaluator needs no chief from the launcher's variables", "[apps]") {
  est::testing::LogCapture log;
  const est::distribute::ClusterConfig evaluator = ResolveClusterOfFlags("", true, EnvironmentOf(kMpiAcrossHosts));
  CHECK(evaluator.is_evaluator());
  CHECK(evaluator.source == "--evaluator");
  CHECK(log.text().find("--evaluator: running as the evaluator task; the launcher's variables, which it does not "
                        "need, name no cluster (") != std::string::npos);
  auto with_chief = kMpiAcrossHosts;
  with_chief["MASTER_ADDR"] = "10.0.0.1";
  CHECK(ResolveClusterOfFlags("", true, EnvironmentOf(with_chief)).is_evaluator());
  CHECK(log.text().find("--evaluator: running as the evaluator task, not as worker 1 of the cluster from mpi") !=
        std::string::npos);
  CHECK_THROWS_MATCHES(ResolveClusterOfFlags("10.0.0.1:1", true, EnvironmentOf(kMpiAcrossHosts)), est::ConfigError,
                       est::testing::MessageMatches(Catch::StartsWith("--chief-address names the training group's "
                                                                      "chief")));
}

}  // namespace est_train_cluster_flags_test
