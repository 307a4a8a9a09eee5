// The NCCL collective with ranks as threads of this process, one GPU each, over an in-memory
// store. The [cuda] tests end with a "skipped" message where fewer GPUs are present.

#include <ATen/ATen.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "distribute/collective/nccl/nccl_collective.h"
#include "distribute/rendezvous/store.h"
#include "tests/distribute/collective_cases.h"
#include "tests/distribute/collective/nccl/cuda_test_util.h"
#include "tests/distribute/rank_threads.h"
#include "tests/test_util.h"

namespace est::distribute {
namespace {

using namespace std::chrono_literals;
using namespace est::testing;

NcclCollectiveOptions WithTimeout(std::chrono::milliseconds timeout) {
  NcclCollectiveOptions options;
  options.timeout = timeout;
  return options;
}

// One rank per GPU, at most 4 (a world of one on one GPU).
int WorldSize() { return std::min(CudaDeviceCount(), 4); }

// Runs `body` on every rank of an NCCL collective of `world_size` threads, rank r on GPU r.
// Each rank's collective ends on its own thread, as every rank's last operation completes.
template <typename Result>
std::vector<Result> OnNcclRanks(int world_size, const std::function<Result(Collective&)>& body) {
  auto store = CreateInMemoryStore();
  return RunRanks<Result>(world_size, [&](int rank) {
    std::unique_ptr<Collective> collective = CreateNcclCollective(store, rank, world_size, Gpu(rank), WithTimeout(30s));
    return body(*collective);
  });
}

// A result, where it was left, copied to the CPU for the checks.
struct Placed {
  at::Tensor value;
  c10::Device device = c10::Device(c10::kCPU);
};

Placed Place(const at::Tensor& tensor) { return Placed{tensor.cpu(), tensor.device()}; }

TEST_CASE("CreateNcclCollective refuses a device that is not CUDA with ConfigError", "[distribute][nccl]") {
  CHECK_THROWS_MATCHES(
      CreateNcclCollective(nullptr, 0, 1, c10::Device("cpu")), ConfigError,
      MessageMatches(Catch::Contains("NCCL collective of rank 0 of 1: device cpu is not a CUDA device")));
}

TEST_CASE("NCCL allreduce sums and averages every dtype and shape, GPU and CPU tensors", "[distribute][nccl][cuda]") {
  EST_REQUIRE_CUDA_DEVICES(1);
  const int world_size = WorldSize();
  const auto results = OnNcclRanks<std::vector<Placed>>(world_size, [&](Collective& collective) {
    std::vector<Placed> reduced;
    for (bool on_gpu : {true, false}) {
      for (at::ScalarType type : kAllreduceTypes) {
        for (ReduceOp op : kAllreduceOps) {
          for (const AllreduceShape& shape : kAllreduceShapes) {
            at::Tensor tensor = AllreduceInput(type, shape, collective.rank());
            if (on_gpu) {
              // Moved as the contiguous tensor it views: a transposed case stays a transposed view.
              const c10::Device gpu = Gpu(collective.rank());
              tensor = shape.transposed ? tensor.t().to(gpu).t() : tensor.to(gpu);
            }
            collective.allreduce(tensor, op);
            reduced.push_back(Place(tensor));
          }
        }
      }
    }
    return reduced;
  });
  for (int rank = 0; rank < world_size; ++rank) {
    size_t index = 0;
    for (bool on_gpu : {true, false}) {
      for (at::ScalarType type : kAllreduceTypes) {
        for (ReduceOp op : kAllreduceOps) {
          for (const AllreduceShape& shape : kAllreduceShapes) {
            const Placed& result = results[rank][index++];
            const at::Tensor expected = AllreduceExpected(type, shape, op, world_size);
            CAPTURE(world_size, rank, on_gpu, at::toString(type), ReduceOpName(op), shape.sizes);
            CHECK(result.device == (on_gpu ? Gpu(rank) : c10::Device(c10::kCPU)));
            CHECK(result.value.scalar_type() == type);
            CHECK(result.value.sizes() == expected.sizes());
            CHECK(result.value.is_contiguous() == !shape.transposed);
            const double tolerance = AllreduceTolerance(type);
            CHECK(at::allclose(result.value.to(at::kDouble), expected, tolerance, tolerance));
          }
        }
      }
    }
  }
}

TEST_CASE("NCCL allreduce orders itself after torch's current stream and before its later work",
          "[distribute][nccl][cuda]") {
  EST_REQUIRE_CUDA_DEVICES(1);
  const int world_size = WorldSize();
  // The input comes out of a chain of kernels still queued on the current stream when the
  // call is made, and the result is used by kernels queued right after it.
  const auto results = OnNcclRanks<at::Tensor>(world_size, [&](Collective& collective) {
    at::Tensor tensor = at::zeros({1 << 20}, at::TensorOptions().device(Gpu(collective.rank())));
    for (int i = 0; i < 50; ++i) tensor.add_(1.0);
    collective.allreduce(tensor, ReduceOp::kSum);
    tensor.mul_(2.0);
    return tensor.cpu();
  });
  for (const at::Tensor& result : results) {
    CHECK(at::equal(result, at::full({1 << 20}, 100.0f * world_size)));
  }
}

TEST_CASE("NCCL broadcast, allgather and barrier, GPU and CPU tensors", "[distribute][nccl][cuda]") {
  EST_REQUIRE_CUDA_DEVICES(1);
  const int world_size = WorldSize();
  const int root = world_size - 1;
  struct Outcome {
    Placed broadcast_float, broadcast_long, broadcast_bool, broadcast_cpu;
    Placed gathered, gathered_transposed, gathered_empty, gathered_cpu;
    int entered_at_exit = 0;
  };
  std::atomic<int> entered{0};
  const auto outcomes = OnNcclRanks<Outcome>(world_size, [&](Collective& collective) {
    const int rank = collective.rank();
    const c10::Device gpu = Gpu(rank);
    Outcome outcome;
    at::Tensor floats = at::full({7}, static_cast<float>(rank), at::TensorOptions().device(gpu));
    collective.broadcast(floats, root);
    outcome.broadcast_float = Place(floats);
    at::Tensor longs = (at::arange(15, at::kLong).reshape({3, 5}) + 100 * rank).to(gpu).t();
    collective.broadcast(longs, root);
    outcome.broadcast_long = Place(longs);
    at::Tensor flags = at::full({5}, rank == root, at::TensorOptions().dtype(at::kBool).device(gpu));
    collective.broadcast(flags, root);
    outcome.broadcast_bool = Place(flags);
    at::Tensor on_cpu = at::arange(4, at::kDouble) + rank;
    collective.broadcast(on_cpu, root);
    outcome.broadcast_cpu = Place(on_cpu);
    outcome.gathered = Place(collective.allgather((at::arange(6, at::kInt).reshape({2, 3}) + 10 * rank).to(gpu)));
    outcome.gathered_transposed =
        Place(collective.allgather((at::arange(6, at::kDouble).reshape({2, 3}) + rank).to(gpu).t()));
    outcome.gathered_empty = Place(collective.allgather(at::empty({0, 2}, at::TensorOptions().device(gpu))));
    outcome.gathered_cpu = Place(collective.allgather(at::full({3}, rank == 0, at::kBool)));
    outcome.entered_at_exit = EnteredBeforeBarrierEnds(collective, entered);
    return outcome;
  });
  for (int rank = 0; rank < world_size; ++rank) {
    CAPTURE(world_size, rank);
    const Outcome& outcome = outcomes[rank];
    const c10::Device gpu = Gpu(rank);
    CHECK(outcome.broadcast_float.device == gpu);
    CHECK(at::equal(outcome.broadcast_float.value, at::full({7}, static_cast<float>(root))));
    CHECK(at::equal(outcome.broadcast_long.value, (at::arange(15, at::kLong).reshape({3, 5}) + 100 * root).t()));
    CHECK_FALSE(outcome.broadcast_long.value.is_contiguous());
    CHECK(outcome.broadcast_bool.value.all().item<bool>());
    CHECK(outcome.broadcast_cpu.device.is_cpu());
    CHECK(at::equal(outcome.broadcast_cpu.value, at::arange(4, at::kDouble) + root));
    REQUIRE(outcome.gathered.value.sizes() == at::IntArrayRef({world_size, 2, 3}));
    REQUIRE(outcome.gathered_transposed.value.sizes() == at::IntArrayRef({world_size, 3, 2}));
    CHECK(outcome.gathered.device == gpu);
    for (int source = 0; source < world_size; ++source) {
      CHECK(at::equal(outcome.gathered.value[source], at::arange(6, at::kInt).reshape({2, 3}) + 10 * source));
      CHECK(at::equal(outcome.gathered_transposed.value[source],
                      (at::arange(6, at::kDouble).reshape({2, 3}) + source).t()));
    }
    CHECK(outcome.gathered_empty.value.sizes() == at::IntArrayRef({world_size, 0, 2}));
    CHECK(outcome.gathered_cpu.device.is_cpu());
    REQUIRE(outcome.gathered_cpu.value.sizes() == at::IntArrayRef({world_size, 3}));
    for (int source = 0; source < world_size; ++source) {
      CHECK(outcome.gathered_cpu.value[source].all().item<bool>() == (source == 0));
    }
    CHECK(outcome.entered_at_exit == world_size);
  }
}

TEST_CASE("NCCL allreduce of a dtype it cannot sum is a ConfigError naming it", "[distribute][nccl][cuda]") {
  EST_REQUIRE_CUDA_DEVICES(1);
  auto collective = CreateNcclCollective(nullptr, 0, 1, Gpu(0), WithTimeout(30s));
  at::Tensor flags = at::ones({3}, at::TensorOptions().dtype(at::kBool).device(Gpu(0)));
  CHECK_THROWS_MATCHES(collective->allreduce(flags, ReduceOp::kSum), ConfigError,
                       MessageMatches(Catch::Contains("NCCL allreduce: unsupported dtype Bool")));
  CHECK_THROWS_AS(collective->broadcast(flags, 1), ConfigError);
  // Refusals leave the collective usable.
  at::Tensor values = at::full({2}, 3, at::TensorOptions().dtype(at::kLong).device(Gpu(0)));
  collective->allreduce(values, ReduceOp::kMean);
  CHECK(at::equal(values.cpu(), at::full({2}, 3, at::kLong)));
}

TEST_CASE("NCCL collective: a rank that never issues makes the others throw TimeoutError within the timeout",
          "[distribute][nccl][cuda]") {
  EST_REQUIRE_CUDA_DEVICES(2);
  auto store = CreateInMemoryStore();
  std::atomic<bool> rank0_done{false};
  std::string first, later;
  std::chrono::steady_clock::duration waited{};
  const auto errors = RunRanksCatching(2, [&](int rank) {
    auto collective = CreateNcclCollective(store, rank, 2, Gpu(rank), WithTimeout(2s));
    if (rank == 1) {
      // Joins nothing; stays until rank 0 has given up (bounded, in case it never does).
      const auto deadline = std::chrono::steady_clock::now() + 60s;
      while (!rank0_done && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
      return;
    }
    at::Tensor tensor = at::ones({16}, at::TensorOptions().device(Gpu(0)));
    const auto start = std::chrono::steady_clock::now();
    try {
      collective->allreduce(tensor, ReduceOp::kSum);
    } catch (const TimeoutError& error) {
      first = error.what();
    }
    waited = std::chrono::steady_clock::now() - start;
    // The communicator was aborted: every later call throws the same error at once.
    try {
      collective->barrier();
    } catch (const TimeoutError& error) {
      later = error.what();
    }
    rank0_done = true;
  });
  for (const auto& error : errors) CHECK(MessageOf(error) == "");
  // Overdue on the GPU ("did not complete within"), or, where NCCL connects peers at their
  // first operation, never issued ("was not issued within").
  CHECK_THAT(first, Catch::Contains("NCCL rank 0 of 2 (cuda:0): allreduce (sum, float32 x 16)") &&
                        Catch::Contains("within 2000 ms"));
  CHECK(waited >= 2s);
  CHECK(waited < 10s);
  CHECK(later == first);
}

TEST_CASE("NCCL collective: a rank cut off (it stopped beating) ends the call waiting on it before the timeout",
          "[distribute][nccl][cuda]") {
  EST_REQUIRE_CUDA_DEVICES(2);
  auto store = CreateInMemoryStore();
  std::atomic<bool> rank0_done{false};
  std::string first;
  std::vector<int> lost;
  std::chrono::steady_clock::duration waited{};
  const auto errors = RunRanksCatching(2, [&](int rank) {
    auto collective = CreateNcclCollective(store, rank, 2, Gpu(rank), WithTimeout(30s));
    if (rank == 1) {
      const auto deadline = std::chrono::steady_clock::now() + 60s;
      while (!rank0_done && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
      return;
    }
    std::thread cutter([&collective] {
      std::this_thread::sleep_for(500ms);
      collective->cut_off({1});
    });
    at::Tensor tensor = at::ones({16}, at::TensorOptions().device(Gpu(0)));
    const auto start = std::chrono::steady_clock::now();
    try {
      collective->allreduce(tensor, ReduceOp::kSum);
    } catch (const CommunicationError& error) {
      first = error.what();
    }
    waited = std::chrono::steady_clock::now() - start;
    cutter.join();
    lost = collective->lost_ranks();
    rank0_done = true;
  });
  for (const auto& error : errors) CHECK(MessageOf(error) == "");
  CHECK_THAT(first, Catch::Contains("NCCL rank 0 of 2 (cuda:0): lost rank 1, which stopped beating"));
  CHECK(waited < 10s);
  CHECK(lost == std::vector<int>{1});
}

}  // namespace
}  // namespace est::distribute
