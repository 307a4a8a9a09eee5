// MultiWorkerMirroredStrategy's choice of collective, made when it is created (workers
// connect on first use, so none connects here).

#include "distribute/multi_worker_mirrored_strategy.h"

#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/error.h"
#include "tests/log_capture.h"
#include "tests/test_util.h"

namespace est::distribute {
namespace {

using Communication = CommunicationImplementation;

constexpr bool kBuildHasNccl = EST_WITH_NCCL && EST_WITH_CUDA;

const std::vector<c10::Device> kCpus = {c10::Device("cpu"), c10::Device("cpu")};
const std::vector<c10::Device> kGpus = {c10::Device("cuda:0"), c10::Device("cuda:1")};

// Worker 0 of two, with the chief's store on a port nothing listens on (never used).
MultiWorkerOptions TwoWorkers(Communication communication, std::vector<std::string> devices) {
  return MultiWorkerOptions()
      .communication(communication)
      .devices(std::move(devices))
      .cluster(MakeRankedClusterConfig(2, 0, 0, "127.0.0.1:9", "explicit"));
}

TEST_CASE("AUTO on CUDA devices in a build without NCCL warns that it chose RING, and why", "[distribute]") {
  testing::LogCapture log;
  ChooseCommunication(Communication::kAuto, kCpus);
  CHECK(log.text().find("chose RING") == std::string::npos);  // CPU devices: nothing to say
  ChooseCommunication(Communication::kAuto, kGpus);
  if (kBuildHasNccl) {
    CHECK(log.text().find("chose RING") == std::string::npos);
  } else {
    CHECK_THAT(log.text(), Catch::Contains("communication AUTO chose RING (Gloo, through host memory) for CUDA "
                                           "devices: this build has no NCCL") &&
                               Catch::Contains("docs/cuda.md"));
  }
}

TEST_CASE("the communication is named auto, ring or nccl, in any case", "[distribute]") {
  CHECK(ParseCommunication("auto", "--communication") == Communication::kAuto);
  CHECK(ParseCommunication("RING", "--communication") == Communication::kRing);
  CHECK(ParseCommunication("Nccl", "--communication") == Communication::kNccl);
  CHECK_THROWS_MATCHES(ParseCommunication("mpi", "--communication"), ConfigError,
                       testing::MessageMatches(Catch::Contains("--communication: unknown communication 'mpi'; "
                                                               "expected auto, ring or nccl")));
}

TEST_CASE("AUTO chooses Gloo for CPU devices, NCCL for CUDA devices where the build has it", "[distribute]") {
  CHECK(ChooseCommunication(Communication::kAuto, kCpus) == Communication::kRing);
  CHECK(ChooseCommunication(Communication::kAuto, {c10::Device("cuda:0"), c10::Device("cpu")}) ==
        Communication::kRing);
  CHECK(ChooseCommunication(Communication::kAuto, kGpus) ==
        (kBuildHasNccl ? Communication::kNccl : Communication::kRing));
  CHECK(ChooseCommunication(Communication::kRing, kGpus) == Communication::kRing);
  CHECK(ChooseCommunication(Communication::kRing, kCpus) == Communication::kRing);
  CHECK_NOTHROW(MultiWorkerMirroredStrategy(TwoWorkers(Communication::kAuto, {"cpu"})));
  CHECK_NOTHROW(MultiWorkerMirroredStrategy(TwoWorkers(Communication::kAuto, {"cuda:0"})));
}

// The message of the ConfigError `body` throws ("" when it throws none).
std::string ConfigErrorOf(const std::function<void()>& body) {
  try {
    body();
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

TEST_CASE("NCCL is refused for devices that are not CUDA devices, in every build", "[distribute]") {
  for (const std::vector<std::string>& devices : {std::vector<std::string>{"cpu"}, {"cuda:0", "cpu"}}) {
    CAPTURE(devices);
    std::vector<c10::Device> parsed;
    for (const std::string& device : devices) parsed.emplace_back(device);
    CHECK_THAT(ConfigErrorOf([&] { ChooseCommunication(Communication::kNccl, parsed); }),
               Catch::Contains("communication NCCL needs CUDA devices") &&
                   Catch::Contains("device 'cpu' is not one") && Catch::Contains("use RING"));
    CHECK_THAT(ConfigErrorOf([&] { MultiWorkerMirroredStrategy(TwoWorkers(Communication::kNccl, devices)); }),
               Catch::Contains("communication NCCL needs CUDA devices") && Catch::Contains("device 'cpu' is not one"));
  }
}

TEST_CASE("NCCL on CUDA devices is accepted exactly where the build has the NCCL collective", "[distribute]") {
  if (kBuildHasNccl) {
    CHECK(ChooseCommunication(Communication::kNccl, kGpus) == Communication::kNccl);
    CHECK_NOTHROW(MultiWorkerMirroredStrategy(TwoWorkers(Communication::kNccl, {"cuda:0", "cuda:1"})));
  } else {
    CHECK_THAT(ConfigErrorOf([&] { ChooseCommunication(Communication::kNccl, kGpus); }),
               Catch::Contains("communication NCCL is not in this build") && Catch::Contains("EST_WITH_NCCL=0") &&
                   Catch::Contains("use RING (Gloo)"));
    CHECK_THAT(ConfigErrorOf([&] { MultiWorkerMirroredStrategy(TwoWorkers(Communication::kNccl, {"cuda:0"})); }),
               Catch::Contains("communication NCCL is not in this build"));
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
