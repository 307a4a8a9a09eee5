// MultiWorkerMirroredStrategy's choice of collective, made when it is created (workers
// connect on first use, so none connects here).

#include "distribute/multi_worker_mirrored_strategy.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "common/config.h"
#include "common/error.h"
#include "tests/test_util.h"

namespace est::distribute {
namespace {

constexpr bool kBuildHasNccl = EST_WITH_NCCL && EST_WITH_CUDA;

// Worker 0 of two, with the chief's store on a port nothing listens on (never used).
MultiWorkerOptions TwoWorkers(const std::string& communication, std::vector<std::string> devices) {
  return MultiWorkerOptions()
      .communication(communication)
      .devices(std::move(devices))
      .cluster(MakeRankedClusterConfig(2, 0, 0, "127.0.0.1:9", "explicit"));
}

TEST_CASE("the strategy agrees its communication with the other workers by backend name", "[distribute]") {
  CHECK_NOTHROW(MultiWorkerMirroredStrategy(TwoWorkers("auto", {"cpu"})));
  CHECK_NOTHROW(MultiWorkerMirroredStrategy(TwoWorkers("auto", {"cuda:0"})));
  CHECK_NOTHROW(MultiWorkerMirroredStrategy(TwoWorkers("RING", {"cuda:0"})));
  CHECK_THAT(testing::ErrorMessageOf<ConfigError>([] { MultiWorkerMirroredStrategy(TwoWorkers("mpi", {"cpu"})); }),
             Catch::Contains("MultiWorkerMirroredStrategy: unknown communication 'mpi'; expected auto, nccl, ring"));
}

TEST_CASE("the strategy refuses NCCL for devices that are not CUDA devices, and where the build lacks it",
          "[distribute]") {
  for (const std::vector<std::string>& devices : {std::vector<std::string>{"cpu"}, {"cuda:0", "cpu"}}) {
    CAPTURE(devices);
    const std::string error = testing::ErrorMessageOf<ConfigError>([&] { MultiWorkerMirroredStrategy(TwoWorkers("nccl", devices)); });
    CHECK_THAT(error, Catch::Contains("MultiWorkerMirroredStrategy: communication nccl"));
    if (kBuildHasNccl) CHECK_THAT(error, Catch::Contains("needs CUDA devices, but device 'cpu' is not one"));
  }
  if (kBuildHasNccl) {
    CHECK_NOTHROW(MultiWorkerMirroredStrategy(TwoWorkers("nccl", {"cuda:0", "cuda:1"})));
  } else {
    CHECK_THAT(testing::ErrorMessageOf<ConfigError>([&] { MultiWorkerMirroredStrategy(TwoWorkers("nccl", {"cuda:0"})); }),
               Catch::Contains("communication nccl is not in this build (EST_WITH_NCCL=OFF") &&
                   Catch::Contains("this build has ring, or auto"));
  }
}

}  // namespace
}  // namespace est::distribute

namespace est::distribute {

TEST_CASE("A ps job in the cluster is refused, not ignored", "[distribute]") {
  const ClusterConfig cluster = ParseTfConfig(
      R"({"cluster": {"worker": ["localhost:1", "localhost:2"], "ps": ["localhost:3", "localhost:4"]},
          "task": {"type": "worker", "index": 0}})");
  CHECK_THROWS_MATCHES(
      MultiWorkerMirroredStrategy(MultiWorkerOptions().cluster(cluster)), ConfigError,
      Catch::Matchers::Predicate<ConfigError>([](const ConfigError& error) {
        return std::string(error.what()) ==
               "MultiWorkerMirroredStrategy: TF_CONFIG has a 'ps' job (2 tasks), which it would not use: parameter "
               "servers need ParameterServerStrategy (est-train --strategy parameter_server); otherwise remove the ps job";
      }));
}

}  // namespace est::distribute
