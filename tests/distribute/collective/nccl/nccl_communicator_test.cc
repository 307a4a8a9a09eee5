#include "distribute/collective/nccl/nccl_communicator.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <thread>
#include <vector>

#include "common/error.h"
#include "distribute/rendezvous/store.h"
#include "tests/distribute/collective/nccl/cuda_test_util.h"
#include "tests/distribute/rank_threads.h"

namespace est::distribute {
namespace {

using namespace std::chrono_literals;
using testing::CudaCheck;
using testing::CudaDeviceCount;
using testing::DeviceBuffer;
using testing::HostBytes;
using testing::RunRanks;
using testing::RunRanksCatching;

NcclOptions ShortTimeout(std::chrono::milliseconds timeout = 20s) {
  NcclOptions options;
  options.timeout = timeout;
  return options;
}

TEST_CASE("NCCL communicator rejects bad arguments with ConfigError before touching a GPU", "[distribute][nccl]") {
  auto store = CreateInMemoryStore();
  CHECK_THROWS_WITH(NcclCommunicator(store, 0, 0, 0), Catch::Contains("world_size is 0; expected at least 1"));
  CHECK_THROWS_WITH(NcclCommunicator(store, 2, 2, 0), Catch::Contains("rank is 2; expected 0 to 1"));
  CHECK_THROWS_WITH(NcclCommunicator(nullptr, 1, 2, 0), Catch::Contains("NCCL rank 1 of 2 (cuda:0)") &&
                                                              Catch::Contains("needs a store"));
  CHECK_THROWS_AS(NcclCommunicator(store, 0, 1, 0, ShortTimeout(0ms)), ConfigError);
}

TEST_CASE("NCCL communicator on a device that is not there throws ConfigError, never crashes", "[distribute][nccl]") {
  const int devices = CudaDeviceCount();
  if (devices == 0) {
    // This machine: no GPU or no driver. Creating a communicator says so.
    CHECK_THROWS_AS(NcclCommunicator(nullptr, 0, 1, 0), ConfigError);
    CHECK_THROWS_WITH(NcclCommunicator(nullptr, 0, 1, 0),
                      Catch::Contains("NCCL rank 0 of 1 (cuda:0)") && Catch::Contains("CUDA device") &&
                          Catch::Contains("NCCL needs a GPU"));
  } else {
    CHECK_THROWS_WITH(NcclCommunicator(nullptr, 0, 1, devices),
                      Catch::Contains("CUDA device " + std::to_string(devices) + " does not exist"));
  }
  CHECK_THROWS_AS(NcclCommunicator(nullptr, 0, 1, -1), ConfigError);
}

const NcclDataType kTypes[] = {NcclDataType::kFloat32, NcclDataType::kFloat64, NcclDataType::kFloat16,
                               NcclDataType::kBFloat16, NcclDataType::kInt32,  NcclDataType::kInt64};

/// Rank `rank`'s element i: small integers, exact in every type.
int Element(int rank, size_t i) { return (rank + 1) * static_cast<int>(i % 7 + 1); }

TEST_CASE("NCCL allreduce sums and averages every dtype across the GPUs", "[distribute][nccl][cuda]") {
  EST_REQUIRE_CUDA_DEVICES(1);
  const int world_size = std::min(CudaDeviceCount(), 4);
  auto store = CreateInMemoryStore();
  constexpr size_t kCount = 1000;
  // Each rank returns its mismatches, checked here (Catch's assertions are not thread-safe).
  auto mismatches = RunRanks<std::string>(world_size, [&](int rank) {
    std::string mismatch;
    CudaCheck(cudaSetDevice(rank), "cudaSetDevice");
    NcclCommunicator communicator(store, rank, world_size, rank, ShortTimeout());
    cudaStream_t stream = nullptr;
    CudaCheck(cudaStreamCreate(&stream), "cudaStreamCreate");
    for (NcclDataType type : kTypes) {
      for (NcclReduceOp op : {NcclReduceOp::kSum, NcclReduceOp::kMean}) {
        std::vector<int> values(kCount);
        for (size_t i = 0; i < kCount; ++i) values[i] = Element(rank, i);
        std::vector<char> bytes = HostBytes(values, type);
        DeviceBuffer buffer(bytes.size());
        CudaCheck(cudaMemcpy(buffer.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
        communicator.allreduce(buffer.get(), kCount, type, op, stream);
        communicator.synchronize();
        std::vector<char> result(bytes.size());
        CudaCheck(cudaMemcpy(result.data(), buffer.get(), bytes.size(), cudaMemcpyDeviceToHost), "cudaMemcpy");
        // Expected: sum_r (r + 1) * k = k * w(w+1)/2; the mean divides it by w, integers with truncation.
        std::vector<int> expected(kCount);
        const bool integer = type == NcclDataType::kInt32 || type == NcclDataType::kInt64;
        for (size_t i = 0; i < kCount; ++i) {
          int sum = static_cast<int>(i % 7 + 1) * world_size * (world_size + 1) / 2;
          expected[i] = op == NcclReduceOp::kSum ? sum : sum / world_size;
          if (op == NcclReduceOp::kMean && !integer && sum % world_size != 0) expected[i] = -1;  // not exact
        }
        for (size_t i = 0; i < kCount; ++i) {
          if (expected[i] < 0) continue;
          std::vector<char> want = HostBytes({expected[i]}, type);
          if (!std::equal(want.begin(), want.end(), result.begin() + i * want.size()) && mismatch.empty()) {
            mismatch = Concat(NcclTypeName(type), " ", NcclOpName(op), ": element ", i, " on rank ",
                              rank, " is not ", expected[i]);
          }
        }
      }
    }
    cudaStreamDestroy(stream);
    return mismatch;
  });
  for (const std::string& mismatch : mismatches) CHECK(mismatch == "");
}

TEST_CASE("NCCL broadcast and allgather across the GPUs", "[distribute][nccl][cuda]") {
  EST_REQUIRE_CUDA_DEVICES(1);
  const int world_size = std::min(CudaDeviceCount(), 4);
  auto store = CreateInMemoryStore();
  const int root = world_size - 1;
  auto results = RunRanks<std::vector<char>>(world_size, [&](int rank) {
    CudaCheck(cudaSetDevice(rank), "cudaSetDevice");
    NcclCommunicator communicator(store, rank, world_size, rank, ShortTimeout());
    cudaStream_t stream = nullptr;
    CudaCheck(cudaStreamCreate(&stream), "cudaStreamCreate");
    std::vector<int> mine = {rank * 10 + 1, rank * 10 + 2, rank * 10 + 3};
    std::vector<char> bytes = HostBytes(mine, NcclDataType::kInt64);
    DeviceBuffer buffer(bytes.size());
    CudaCheck(cudaMemcpy(buffer.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
    communicator.broadcast(buffer.get(), 3, NcclDataType::kInt64, root, stream);
    DeviceBuffer gathered(bytes.size() * world_size);
    communicator.allgather(buffer.get(), gathered.get(), 3, NcclDataType::kInt64, stream);
    communicator.synchronize();
    std::vector<char> result(bytes.size() * world_size);
    CudaCheck(cudaMemcpy(result.data(), gathered.get(), result.size(), cudaMemcpyDeviceToHost), "cudaMemcpy");
    cudaStreamDestroy(stream);
    return result;
  });
  std::vector<int> expected;
  for (int source = 0; source < world_size; ++source) {
    for (int i = 1; i <= 3; ++i) expected.push_back(root * 10 + i);  // every rank gathered root's values
  }
  for (const auto& result : results) CHECK(result == HostBytes(expected, NcclDataType::kInt64));
}

TEST_CASE("NCCL communicator creation times out naming the ranks that never arrived", "[distribute][nccl][cuda]") {
  EST_REQUIRE_CUDA_DEVICES(1);
  auto store = CreateInMemoryStore();
  auto start = std::chrono::steady_clock::now();
  // Rank 1 of 2 never comes: rank 0 publishes the id and NCCL's initialisation waits for it.
  CHECK_THROWS_AS(NcclCommunicator(store, 0, 2, 0, ShortTimeout(2s)), TimeoutError);
  CHECK(std::chrono::steady_clock::now() - start < 20s);
  // A second attempt is a fresh round of keys and fails the same way, with the ranks named.
  CHECK_THROWS_WITH(NcclCommunicator(store, 0, 2, 0, ShortTimeout(2s)),
                    Catch::Contains("did not complete within 2000 ms") &&
                        Catch::Contains("ranks that never arrived: [1]"));
  // Rank 1 without rank 0: the unique id never appears.
  CHECK_THROWS_WITH(NcclCommunicator(CreateInMemoryStore(), 1, 2, 0, ShortTimeout(500ms)),
                    Catch::Contains("rank 0 did not publish the NCCL unique id within 500 ms"));
}

TEST_CASE("NCCL watchdog aborts every communicator when a rank skips an operation", "[distribute][nccl][cuda]") {
  EST_REQUIRE_CUDA_DEVICES(2);
  auto store = CreateInMemoryStore();
  auto watchdog = std::make_shared<NcclWatchdog>();
  NcclOptions options = ShortTimeout(3s);
  options.watchdog = watchdog;
  std::vector<std::string> later(2);
  auto errors = RunRanksCatching(2, [&](int rank) {
    CudaCheck(cudaSetDevice(rank), "cudaSetDevice");
    NcclCommunicator communicator(store, rank, 2, rank, options);
    DeviceBuffer buffer(4 * 16);
    CudaCheck(cudaMemset(buffer.get(), 0, 4 * 16), "cudaMemset");
    if (rank == 0) {
      // Rank 1 never joins this all-reduce: it stays incomplete until the watchdog's timeout.
      communicator.allreduce(buffer.get(), 16, NcclDataType::kFloat32, NcclReduceOp::kSum, nullptr);
      try {
        communicator.synchronize();
      } catch (const TimeoutError&) {
        // Expected; the later call below must throw it again.
      }
    } else {
      auto deadline = std::chrono::steady_clock::now() + 30s;
      while (!watchdog->failed() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
    }
    // Both ranks' communicators were aborted: every later call throws the recorded error.
    try {
      communicator.allreduce(buffer.get(), 16, NcclDataType::kFloat32, NcclReduceOp::kSum, nullptr);
    } catch (const TimeoutError& error) {
      later[rank] = error.what();
    }
  });
  for (const auto& error : errors) CHECK(testing::MessageOf(error) == "");
  for (const std::string& error : later) {
    CHECK_THAT(error, Catch::Contains("NCCL rank 0 of 2 (cuda:0)") &&
                          Catch::Contains("allreduce (sum, float32 x 16) did not complete within 3000 ms"));
  }
}

}  // namespace
}  // namespace est::distribute
