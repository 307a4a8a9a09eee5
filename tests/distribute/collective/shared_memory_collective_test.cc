// WithHostSharedMemory decorates any collective: a fake backend whose all-reduce must never
// run gets exact sums and means through shared memory, and keeps its other operations.

#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>

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
  void broadcast(at::Tensor& tensor, int root) override {
    ++*forwarded_;
    tensor.fill_(root + 40);
  }
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
    at::Tensor root = at::zeros({2});
    collective->broadcast(root, 1);
    collective->barrier();
    return std::vector<at::Tensor>{sum, mean, truncated, half, strided, root};
  });
  for (const auto& result : results) {
    CHECK(at::equal(result[0], at::arange(1000, at::kLong) * 6));
    CHECK(at::equal(result[1], at::full({5}, 6.0, at::kDouble)));
    CHECK(at::equal(result[2], at::zeros({4}, at::kInt)));
    CHECK(at::equal(result[3], at::full({3}, 3.0, at::kHalf)));
    CHECK(at::equal(result[4], (at::arange(12, at::kFloat).reshape({3, 4}) * 6).t()));
    CHECK(at::equal(result[5], at::full({2}, 41.0)));
  }
  CHECK(forwarded == 2 * world);  // broadcast and barrier went to the backend
}

TEST_CASE("a world of one keeps the backend as it is", "[distribute]") {
  std::atomic<int> forwarded{0};
  auto store = CreateInMemoryStore();
  auto collective = WithHostSharedMemory(std::make_unique<FakeCollective>(0, 1, &forwarded), *store, 1s);
  CHECK(collective->name() == "fake");
}
