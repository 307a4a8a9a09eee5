#include "distribute/collective/nccl/nccl_watchdog.h"

#include <catch2/catch.hpp>

#include <atomic>

#include "common/error.h"
#include "tests/distribute/collective/nccl/cuda_test_util.h"

namespace est::distribute {
namespace {

using namespace std::chrono_literals;

TEST_CASE("NCCL watchdog records the first failure, which check() throws from then on", "[distribute][nccl]") {
  NcclWatchdog watchdog;
  auto comm = std::make_shared<NcclComm>();
  comm->name = "NCCL rank 0 of 2 (cuda:0)";  // no handle: nothing for the watchdog to abort
  watchdog.watch(comm);
  CHECK_NOTHROW(watchdog.check());
  CHECK_FALSE(watchdog.failed());
  CHECK_NOTHROW(watchdog.wait_idle(comm, std::chrono::steady_clock::now() + 1s));

  watchdog.fail(std::make_exception_ptr(CommunicationError("rank 1 disappeared")));
  watchdog.fail(std::make_exception_ptr(TimeoutError("a later failure")));
  CHECK(watchdog.failed());
  CHECK_THROWS_AS(watchdog.check(), CommunicationError);
  CHECK_THROWS_WITH(watchdog.check(), "rank 1 disappeared");
  CHECK_THROWS_WITH(watchdog.wait_idle(comm, std::chrono::steady_clock::now() + 1s), "rank 1 disappeared");
  watchdog.unwatch(comm);
}

/// A host function on a stream that holds the stream until the test releases it.
struct StreamGate {
  std::atomic<bool> open{false};
  static void CUDART_CB Wait(void* gate) {
    while (!static_cast<StreamGate*>(gate)->open.load()) std::this_thread::sleep_for(1ms);
  }
};

TEST_CASE("NCCL watchdog fails an operation that has not completed within its timeout", "[distribute][nccl][cuda]") {
  EST_REQUIRE_CUDA_DEVICES(1);
  using testing::CudaCheck;
  CudaCheck(cudaSetDevice(0), "cudaSetDevice");
  cudaStream_t stream = nullptr;
  CudaCheck(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  StreamGate gate;
  CudaCheck(cudaLaunchHostFunc(stream, &StreamGate::Wait, &gate), "cudaLaunchHostFunc");
  {
    NcclWatchdog watchdog(NcclWatchdogOptions{5ms});
    auto comm = std::make_shared<NcclComm>();
    comm->name = "NCCL rank 0 of 1 (cuda:0)";
    watchdog.watch(comm);
    cudaEvent_t event = nullptr;
    CudaCheck(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
    CudaCheck(cudaEventRecord(event, stream), "cudaEventRecord");
    auto start = std::chrono::steady_clock::now();
    watchdog.track(comm, event, "allreduce (sum, float32 x 8)", 200ms);
    CHECK_THROWS_AS(watchdog.wait_idle(comm, start + 10s), TimeoutError);
    CHECK(std::chrono::steady_clock::now() - start < 5s);
    CHECK_THROWS_WITH(watchdog.check(), Catch::Contains("NCCL rank 0 of 1 (cuda:0)") &&
                                            Catch::Contains("allreduce (sum, float32 x 8)") &&
                                            Catch::Contains("did not complete within 200 ms") &&
                                            Catch::Contains("aborted"));
  }
  gate.open = true;
  CudaCheck(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  cudaStreamDestroy(stream);
}

TEST_CASE("NCCL watchdog forgets operations that complete", "[distribute][nccl][cuda]") {
  EST_REQUIRE_CUDA_DEVICES(1);
  using testing::CudaCheck;
  CudaCheck(cudaSetDevice(0), "cudaSetDevice");
  NcclWatchdog watchdog(NcclWatchdogOptions{5ms});
  auto comm = std::make_shared<NcclComm>();
  comm->name = "NCCL rank 0 of 1 (cuda:0)";
  watchdog.watch(comm);
  for (int i = 0; i < 20; ++i) {
    cudaEvent_t event = nullptr;
    CudaCheck(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
    CudaCheck(cudaEventRecord(event, nullptr), "cudaEventRecord");
    watchdog.track(comm, event, "broadcast (root 0, int32 x 1)", 10s);
  }
  CHECK_NOTHROW(watchdog.wait_idle(comm, std::chrono::steady_clock::now() + 10s));
  CHECK_FALSE(watchdog.failed());
}

}  // namespace
}  // namespace est::distribute
