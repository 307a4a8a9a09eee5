// The collective backends by name: the registry of this build, communication "auto"'s choice
// and its warning, the errors for names and devices, and CreateCollective, which connects a
// backend and composes a host-memory one with shared memory.

#include "distribute/collective/collective_backend.h"

#include <ATen/ATen.h>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "common/config.h"
#include "common/error.h"
#include "distribute/rendezvous/store.h"
#include "tests/distribute/rank_threads.h"
#include "tests/log_capture.h"
#include "tests/test_util.h"

namespace est::distribute {
namespace {

using namespace std::chrono_literals;

constexpr bool kBuildHasNccl = EST_WITH_NCCL && EST_WITH_CUDA;

const std::vector<c10::Device> kCpus = {c10::Device("cpu"), c10::Device("cpu")};
const std::vector<c10::Device> kGpus = {c10::Device("cuda:0"), c10::Device("cuda:1")};

TEST_CASE("the registry lists nccl then ring, each saying whether this build has it", "[distribute]") {
  const auto& backends = CollectiveBackends();
  REQUIRE(backends.size() == 2);
  CHECK(backends[0].name == "nccl");
  CHECK(backends[0].devices == BackendDevices::kCuda);
  CHECK(backends[0].connector.host_memory == false);
  CHECK(backends[0].missing.empty() == kBuildHasNccl);
  CHECK((backends[0].connector.connect != nullptr) == kBuildHasNccl);
  if (!kBuildHasNccl) CHECK_THAT(backends[0].missing, Catch::Contains("EST_WITH_NCCL=OFF") && Catch::Contains("docs/cuda.md"));
  CHECK(backends[1].name == "ring");
  CHECK(backends[1].devices == BackendDevices::kAny);
  CHECK(backends[1].missing.empty());
  CHECK(backends[1].connector.host_memory);
  CHECK_THAT(backends[1].description, Catch::Contains("Gloo"));
  CHECK(CommunicationNames() == std::vector<std::string>{"auto", "nccl", "ring"});
}

TEST_CASE("auto chooses ring for CPU devices, nccl for CUDA devices where the build has it", "[distribute]") {
  CHECK(ChooseCollectiveBackend("auto", kCpus, "test").name == "ring");
  CHECK(ChooseCollectiveBackend("AUTO", {c10::Device("cuda:0"), c10::Device("cpu")}, "test").name == "ring");
  CHECK(ChooseCollectiveBackend("auto", kGpus, "test").name == (kBuildHasNccl ? "nccl" : "ring"));
  CHECK(ChooseCollectiveBackend("Ring", kGpus, "test").name == "ring");
  CHECK(&ChooseCollectiveBackend("ring", kCpus, "test") == &CollectiveBackends()[1]);
}

TEST_CASE("auto warns where it passed over a backend the build lacks, and why", "[distribute]") {
  testing::LogCapture log;
  ChooseCollectiveBackend("auto", kCpus, "test");
  CHECK(log.text().find("passed over") == std::string::npos);  // nccl would not serve CPUs: nothing to say
  ChooseCollectiveBackend("auto", kGpus, "test");
  if (kBuildHasNccl) {
    CHECK(log.text().find("passed over") == std::string::npos);
  } else {
    CHECK_THAT(log.text(), Catch::Contains("test: communication auto passed over nccl (NCCL between CUDA devices)") &&
                               Catch::Contains("this build lacks it (EST_WITH_NCCL=OFF") &&
                               Catch::Contains("docs/cuda.md"));
  }
  const auto warned = log.text().size();
  ChooseCollectiveBackend("ring", kGpus, "test");
  CHECK(log.text().size() == warned);  // asked by name: silent
}

TEST_CASE("an unknown name, a backend the build lacks and devices a backend does not serve are ConfigErrors",
          "[distribute]") {
  CHECK_THAT(testing::ErrorMessageOf<ConfigError>([] { ChooseCollectiveBackend("mpi", kCpus, "--communication"); }),
             Catch::Contains("--communication: unknown communication 'mpi'; expected auto, nccl, ring"));
  for (const std::vector<c10::Device>& devices : {std::vector<c10::Device>{c10::Device("cpu")}, kGpus}) {
    CAPTURE(devices);
    const std::string error = testing::ErrorMessageOf<ConfigError>([&] { ChooseCollectiveBackend("nccl", devices, "test"); });
    if (!kBuildHasNccl) {
      CHECK_THAT(error, Catch::Contains("test: communication nccl is not in this build (EST_WITH_NCCL=OFF") &&
                            Catch::Contains("this build has ring, or auto"));
    } else if (devices.front().is_cuda()) {
      CHECK(error.empty());
    } else {
      CHECK_THAT(error, Catch::Contains("test: communication nccl needs CUDA devices, but device 'cpu' is not one") &&
                            Catch::Contains("this build has nccl, ring, or auto"));
    }
  }
  if (!kBuildHasNccl)
    CHECK_THAT(testing::ErrorMessageOf<ConfigError>([] { CreateCollective(CollectiveBackends()[0], CollectiveRequest()); }),
               Catch::Contains("collective backend nccl is not in this build (EST_WITH_NCCL=OFF"));
}

// Connects `world` ranks of `backend` as threads and all-reduces rank-dependent integers.
std::vector<std::string> AllreduceOverBackend(const CollectiveBackend& backend, int world, bool shared_memory) {
  auto store = CreateInMemoryStore();
  return testing::RunRanks<std::string>(world, [&](int rank) {
    CollectiveRequest request;
    request.store = store;
    request.rank = rank;
    request.world_size = world;
    request.timeout = 20s;
    request.shared_memory = shared_memory;
    auto collective = CreateCollective(backend, request);
    CHECK(collective->rank() == rank);
    CHECK(collective->world_size() == world);
    at::Tensor tensor = at::arange(1000, at::kLong) * (rank + 1);
    collective->allreduce(tensor, ReduceOp::kSum);
    CHECK(at::equal(tensor, at::arange(1000, at::kLong) * (world * (world + 1) / 2)));
    return collective->name();
  });
}

TEST_CASE("CreateCollective connects ring, through shared memory among the ranks of this host unless told not to",
          "[distribute]") {
  const CollectiveBackend& ring = ChooseCollectiveBackend("ring", kCpus, "test");
  CHECK(AllreduceOverBackend(ring, 3, true) == std::vector<std::string>(3, "gloo+shm"));
  CHECK(AllreduceOverBackend(ring, 3, false) == std::vector<std::string>(3, "gloo"));
  CHECK(AllreduceOverBackend(ring, 1, true) == std::vector<std::string>{"gloo"});
}

}  // namespace
}  // namespace est::distribute
