// WithHostSharedMemory decorates any collective: a fake backend whose all-reduce and broadcast
// must never run gets exact sums, means and broadcasts through shared memory, and keeps its
// other operations.

#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/error.h"
#include "distribute/collective/collective.h"
#include "distribute/collective/shared_memory_collective.h"
#include "distribute/rendezvous/store.h"
#include "tests/distribute/rank_threads.h"

using namespace est::distribute;
using namespace std::chrono_literals;

namespace {

/// A backend of its own: counts the calls that reach it; its all-reduce fails the test.
class FakeCollective final : public Collective {
 public:
  FakeCollective(int rank, int world_size, std::atomic<int>* forwarded)
      : rank_(rank), world_size_(world_size), forwarded_(forwarded) {}
  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  std::string name() const override { return "fake"; }
  void allreduce(at::Tensor&, ReduceOp) override { throw std::logic_error("the fake's own all-reduce ran"); }
  void broadcast(at::Tensor&, int) override { throw std::logic_error("the fake's own broadcast ran"); }
  at::Tensor allgather(const at::Tensor& tensor) override {
    ++*forwarded_;
    return tensor.unsqueeze(0);
  }
  void barrier() override { ++*forwarded_; }

 private:
  int rank_;
  int world_size_;
  std::atomic<int>* forwarded_;
};

}  // namespace

TEST_CASE("shared memory all-reduces for any backend whose ranks share this host", "[distribute]") {
  const int world = 3;
  auto store = CreateInMemoryStore();
  std::atomic<int> forwarded{0};
  auto results = est::testing::RunRanks<std::vector<at::Tensor>>(world, [&](int rank) {
    auto collective = WithHostSharedMemory(std::make_unique<FakeCollective>(rank, world, &forwarded), *store, 20s);
    CHECK(collective->name() == "fake+shm");
    CHECK(collective->allreduce_computes_on_cpu());
    CHECK(collective->rank() == rank);
    at::Tensor sum = at::arange(1000, at::kLong) * (rank + 1);
    collective->allreduce(sum, ReduceOp::kSum);
    at::Tensor mean = at::full({5}, 3.0 * (rank + 1), at::kDouble);
    collective->allreduce(mean, ReduceOp::kMean);
    at::Tensor truncated = at::full({4}, rank == 0 ? 2 : 0, at::kInt);  // 2 / 3 truncates to 0
    collective->allreduce(truncated, ReduceOp::kMean);
    at::Tensor half = at::full({3}, 0.5 * (rank + 1), at::kHalf);  // summed in float32
    collective->allreduce(half, ReduceOp::kSum);
    at::Tensor strided = (at::arange(12, at::kFloat).reshape({3, 4}) * (rank + 1)).t();  // not contiguous
    collective->allreduce(strided, ReduceOp::kSum);
    at::Tensor root = rank == 1 ? at::full({2}, 41.0) : at::zeros({2});
    collective->broadcast(root, 1);
    // 20 MB: several chunks; bytes of a dtype the all-reduce does not take; not contiguous.
    at::Tensor large = rank == 2 ? at::arange(5'000'000, at::kFloat) : at::zeros({5'000'000});
    collective->broadcast(large, 2);
    at::Tensor flags = at::full({7}, rank == 0, at::kBool);
    collective->broadcast(flags, 0);
    at::Tensor columns = (rank == 0 ? at::arange(6, at::kDouble) : at::zeros({6}, at::kDouble)).reshape({2, 3}).t();
    collective->broadcast(columns, 0);
    collective->barrier();
    return std::vector<at::Tensor>{sum, mean, truncated, half, strided, root, large, flags, columns};
  });
  for (const auto& result : results) {
    CHECK(at::equal(result[0], at::arange(1000, at::kLong) * 6));
    CHECK(at::equal(result[1], at::full({5}, 6.0, at::kDouble)));
    CHECK(at::equal(result[2], at::zeros({4}, at::kInt)));
    CHECK(at::equal(result[3], at::full({3}, 3.0, at::kHalf)));
    CHECK(at::equal(result[4], (at::arange(12, at::kFloat).reshape({3, 4}) * 6).t()));
    CHECK(at::equal(result[5], at::full({2}, 41.0)));
    CHECK(at::equal(result[6], at::arange(5'000'000, at::kFloat)));
    CHECK(at::equal(result[7], at::ones({7}, at::kBool)));
    CHECK(at::equal(result[8], at::arange(6, at::kDouble).reshape({2, 3}).t()));
  }
  CHECK(forwarded == world);  // only the barrier went to the backend
}

TEST_CASE("a shared-memory broadcast of different sizes fails on every rank, naming both", "[distribute]") {
  auto store = CreateInMemoryStore();
  std::atomic<int> forwarded{0};
  std::vector<std::string> errors(2);
  est::testing::RunRanks<int>(2, [&](int rank) {
    auto collective = WithHostSharedMemory(std::make_unique<FakeCollective>(rank, 2, &forwarded), *store, 20s);
    at::Tensor tensor = at::zeros({rank == 0 ? 3 : 4});
    try {
      collective->broadcast(tensor, 0);
    } catch (const est::CommunicationError& error) {
      errors[static_cast<size_t>(rank)] = error.what();
    }
    return 0;
  });
  CHECK_THAT(errors[0], Catch::Contains("Gloo broadcast on rank 0 of 2") && Catch::Contains("rank 1 passes a chunk of 16 bytes"));
  CHECK_THAT(errors[1], Catch::Contains("Gloo broadcast on rank 1 of 2") && Catch::Contains("rank 0 passes a chunk of 12 bytes"));
}

TEST_CASE("a world of one keeps the backend as it is", "[distribute]") {
  std::atomic<int> forwarded{0};
  auto store = CreateInMemoryStore();
  auto collective = WithHostSharedMemory(std::make_unique<FakeCollective>(0, 1, &forwarded), *store, 1s);
  CHECK(collective->name() == "fake");
  CHECK_FALSE(collective->allreduce_computes_on_cpu());
}
