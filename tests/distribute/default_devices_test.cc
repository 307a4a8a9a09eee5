// The devices a strategy takes when none are given: every GPU for MirroredStrategy, the local
// rank's GPU for a task of a cluster, the CPU where there is none. The rules are checked with
// faked device counts (LibTorch cannot fake its own); the strategies on this host's devices.

#include "distribute/default_devices.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/error.h"
#include "distribute/cluster/cluster_config.h"
#include "distribute/multi_worker_mirrored_strategy.h"
#include "distribute/strategy.h"
#include "tests/log_capture.h"
#include "tests/test_util.h"
#include "tests/torch_cuda_devices.h"
#include "tests/skip.h"

using namespace est::distribute;
using est::testing::MessageMatches;

namespace default_devices_test {
namespace {

std::vector<std::string> Names(const std::vector<c10::Device>& devices) {
  std::vector<std::string> names;
  for (const auto& device : devices) names.push_back(device.str());
  return names;
}

}  // namespace

TEST_CASE("without devices: every GPU, the local rank's GPU, or the CPU (faked device counts)", "[distribute]") {
  CHECK(EveryLocalDevice(0) == std::vector<std::string>{"cpu"});
  CHECK(EveryLocalDevice(1) == std::vector<std::string>{"cuda:0"});
  CHECK(EveryLocalDevice(4) == std::vector<std::string>{"cuda:0", "cuda:1", "cuda:2", "cuda:3"});
  CHECK(DeviceOfLocalRank(0, 0) == "cpu");
  CHECK(DeviceOfLocalRank(7, 0) == "cpu");  // CPU tasks share the CPU
  CHECK(DeviceOfLocalRank(0, 8) == "cuda:0");
  CHECK(DeviceOfLocalRank(3, 8) == "cuda:3");
  CHECK(DeviceOfLocalRank(7, 8) == "cuda:7");
  CHECK_THROWS_MATCHES(DeviceOfLocalRank(2, 2), est::ConfigError,
                       MessageMatches(Catch::Contains("local rank 2 has no GPU of its own: LibTorch sees 2 CUDA "
                                                      "device(s) on this host (cuda:0 to cuda:1)")));
  CHECK_THROWS_MATCHES(DeviceOfLocalRank(-1, 2), est::ConfigError,
                       MessageMatches(Catch::Contains("local rank -1 is negative")));
}

TEST_CASE("without GPUs, the strategies made without devices take the CPU and say so", "[distribute][skippable]") {
  if (CudaDeviceCount() > 0) EST_SKIP("needs a host without GPUs (the [cuda] case below covers one with GPUs)");
  est::testing::LogCapture log;
  CHECK(Names(MirroredStrategy::Create()->local_devices()) == std::vector<std::string>{"cpu"});
  CHECK_THAT(log.text(), Catch::Contains("info: MirroredStrategy: no devices given: the CPU (LibTorch sees no GPU)"));
  auto multi_worker = MultiWorkerMirroredStrategy::Create();
  CHECK(Names(multi_worker->local_devices()) == std::vector<std::string>{"cpu"});
  CHECK_THAT(log.text(), Catch::Contains("info: MultiWorkerMirroredStrategy: no devices given: the CPU (LibTorch "
                                         "sees no GPU)"));
}

TEST_CASE("with GPUs, MirroredStrategy() takes them all and each task of a cluster its local rank's",
          "[distribute][cuda]") {
  EST_REQUIRE_TORCH_CUDA_DEVICES(1);
  const int gpus = CudaDeviceCount();
  est::testing::LogCapture log;
  CHECK(Names(MirroredStrategy::Create()->local_devices()) == EveryLocalDevice(gpus));
  CHECK_THAT(log.text(), Catch::Contains("MirroredStrategy: no devices given: every GPU, cuda:0"));

  // The last local rank of the host takes the last GPU, once the strategy knows its cluster.
  const ClusterConfig cluster = MakeRankedClusterConfig(gpus + 1, gpus - 1, gpus - 1, "127.0.0.1:9", "explicit");
  auto given = MultiWorkerMirroredStrategy::Create(MultiWorkerOptions().cluster(cluster));
  CHECK(Names(given->local_devices()) == std::vector<std::string>{"cuda:" + std::to_string(gpus - 1)});
  auto configured = MultiWorkerMirroredStrategy::Create();
  CHECK_THROWS_MATCHES(configured->local_devices(), est::ConfigError,
                       MessageMatches(Catch::Contains("takes the GPU of its task's local rank")));
  configured->configure(cluster);
  CHECK(Names(configured->local_devices()) == std::vector<std::string>{"cuda:" + std::to_string(gpus - 1)});
  CHECK_THAT(log.text(), Catch::Contains("MultiWorkerMirroredStrategy: no devices given: local rank " +
                                         std::to_string(gpus - 1) + " takes cuda:" + std::to_string(gpus - 1)));
  // A local rank past the last GPU.
  const ClusterConfig crowded = MakeRankedClusterConfig(gpus + 1, gpus, gpus, "127.0.0.1:9", "explicit");
  CHECK_THROWS_MATCHES(MultiWorkerMirroredStrategy::Create(MultiWorkerOptions().cluster(crowded)), est::ConfigError,
                       MessageMatches(Catch::Contains("local rank " + std::to_string(gpus) + " has no GPU of its own")));
}

}  // namespace default_devices_test
