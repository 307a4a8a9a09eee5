// ReplicaGroup: local replicas taking turns on their threads, and the collectives model_fn
// calls over them and over other workers.

#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "distribute/collective/gloo/gloo_collective.h"
#include "distribute/replica_group.h"
#include "distribute/rendezvous/store.h"
#include "tests/distribute/rank_threads.h"

// The file's own names, apart from those of the tests compiled with it in one unit.
namespace replica_group_test {
using namespace est::distribute;

TEST_CASE("Local replicas without collectives run in replica order, with the caller's grad mode",
          "[distribute][replica_group]") {
  ReplicaGroup group(3);
  std::vector<int> order;
  std::vector<int> grad_enabled(3, -1);
  at::NoGradGuard no_grad;
  group.run([&](int r) {
    order.push_back(r);
    grad_enabled[static_cast<size_t>(r)] = at::GradMode::is_enabled() ? 1 : 0;
  });
  CHECK(order == std::vector<int>{0, 1, 2});
  CHECK(grad_enabled == std::vector<int>{0, 0, 0});
  // A second run on the same threads.
  order.clear();
  group.run([&](int r) { order.push_back(r); });
  CHECK(order == std::vector<int>{0, 1, 2});
}

TEST_CASE("all_reduce and all_gather over local replicas give exact values, and replica 0 goes on first",
          "[distribute][replica_group]") {
  ReplicaGroup group(3);
  REQUIRE(group.size() == 3);
  std::vector<at::Tensor> sums(3), means(3), gathered(3), integer_means(3);
  std::vector<std::string> events;
  group.run([&](int r) {
    events.push_back("before " + std::to_string(r));
    const at::Tensor value = at::full({2}, static_cast<double>(r + 1), at::kDouble);
    sums[static_cast<size_t>(r)] = group.all_reduce(r, value, ReduceOp::kSum);
    events.push_back("after " + std::to_string(r));
    means[static_cast<size_t>(r)] = group.all_reduce(r, value, ReduceOp::kMean);
    gathered[static_cast<size_t>(r)] = group.all_gather(r, at::full({1, 2}, static_cast<double>(r), at::kDouble), 0);
    integer_means[static_cast<size_t>(r)] =
        group.all_reduce(r, at::full({1}, int64_t{r + 1}, at::kLong), ReduceOp::kMean);  // (1+2+3)/3
  });
  CHECK(events == std::vector<std::string>{"before 0", "before 1", "before 2", "after 0", "after 1", "after 2"});
  for (int r = 0; r < 3; ++r) {
    CHECK(at::equal(sums[static_cast<size_t>(r)], at::full({2}, 6.0, at::kDouble)));
    CHECK(at::equal(means[static_cast<size_t>(r)], at::full({2}, 2.0, at::kDouble)));
    CHECK(at::equal(gathered[static_cast<size_t>(r)],
                    at::tensor({0.0, 0.0, 1.0, 1.0, 2.0, 2.0}, at::kDouble).reshape({3, 2})));
    CHECK(integer_means[static_cast<size_t>(r)].item<int64_t>() == 2);
  }
  // Each replica owns its result.
  sums[0].add_(1);
  CHECK(sums[1][0].item<double>() == 6.0);
}

TEST_CASE("A collective one local replica calls and another never does fails at once, naming both",
          "[distribute][replica_group]") {
  ReplicaGroup group(2);
  auto run = [&] {
    group.run([&](int r) {
      if (r == 0) group.all_reduce(r, at::ones({1}), ReduceOp::kSum);
    });
  };
  REQUIRE_THROWS_AS(run(), est::ModelError);
  try {
    run();
  } catch (const est::ModelError& error) {
    CHECK_THAT(error.what(), Catch::Contains("all_reduce (collective 1 of this step) was called by replica 0 but "
                                             "replica 1 finished its model code without calling it"));
  }
  // The group is usable after the failure.
  std::vector<double> sums(2);
  group.run([&](int r) { sums[static_cast<size_t>(r)] = group.all_reduce(r, at::ones({1}), ReduceOp::kSum).item<double>(); });
  CHECK(sums == std::vector<double>{2.0, 2.0});
}

TEST_CASE("A replica's own error wins over the collective it left waiting; mismatched calls are ModelErrors",
          "[distribute][replica_group]") {
  ReplicaGroup group(2);
  CHECK_THROWS_WITH(group.run([&](int r) {
    if (r == 1) throw est::DataError("replica 1 read a bad file");
    group.all_reduce(r, at::ones({1}), ReduceOp::kSum);
  }),
                    "replica 1 read a bad file");
  CHECK_THROWS_WITH(group.run([&](int r) {
    if (r == 0) group.all_reduce(r, at::ones({1}), ReduceOp::kSum);
    if (r == 1) group.all_gather(r, at::ones({1}), 0);
  }),
                    Catch::Contains("replica 1 called model_fn's all_gather where replica 0 called all_reduce"));
  CHECK_THROWS_WITH(group.run([&](int r) { group.all_reduce(r, at::ones({r + 1}), ReduceOp::kSum); }),
                    Catch::Contains("replica 1 gave a tensor of shape [2]") && Catch::Contains("replica 0 gave shape [1]"));
  CHECK_THROWS_WITH(group.run([&](int r) { group.all_gather(r, at::ones({2}), 1); }),
                    Catch::Contains("axis 1 is out of range for a tensor of 1 dimensions"));
}

TEST_CASE("Alone, collectives return what every replica bringing the same value would give",
          "[distribute][replica_group]") {
  ReplicaGroup group(2);
  const ReplicaGroup::Alone alone(group);
  CHECK(group.all_reduce(0, at::full({1}, 3.0), ReduceOp::kSum).item<double>() == 6.0);
  CHECK(group.all_reduce(0, at::full({1}, 3.0), ReduceOp::kMean).item<double>() == 3.0);
  CHECK(group.all_gather(0, at::ones({1, 2}), 0).sizes() == at::IntArrayRef{2, 2});
}

TEST_CASE("Across two workers of two local replicas each, collectives span all four in worker-major order",
          "[distribute][replica_group]") {
  auto store = CreateInMemoryStore();
  const auto results = est::testing::RunRanks<std::vector<at::Tensor>>(2, [&](int worker) {
    GlooOptions gloo;
    gloo.timeout = std::chrono::seconds(20);
    std::unique_ptr<Collective> collective = CreateGlooCollective(store, worker, 2, gloo);
    ReplicaGroup group(2, 2, worker, [&]() -> Collective& { return *collective; });
    std::vector<at::Tensor> out(4);
    group.run([&](int r) {
      const double id = group.replica_id(r);
      out[static_cast<size_t>(r)] = group.all_reduce(r, at::full({1}, id + 1), ReduceOp::kSum);
      out[static_cast<size_t>(2 + r)] = group.all_gather(r, at::full({1}, id), 0);
    });
    return out;
  });
  for (const auto& worker : results) {
    for (int r = 0; r < 2; ++r) {
      CHECK(worker[static_cast<size_t>(r)].item<float>() == 10.0f);  // 1 + 2 + 3 + 4
      CHECK(at::equal(worker[static_cast<size_t>(2 + r)], at::arange(4, at::kFloat)));
    }
  }
}

}  // namespace replica_group_test
