// ReplicaSet: local replicas that start equal (restored, then copied from replica 0), state
// that must match across replicas, and buffers kept equal as the strategy's BufferSync says.

#include "estimator/replica_set.h"

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_writer.h"
#include "common/error.h"
#include "distribute/strategy.h"
#include "estimator/model_checkpoint.h"
#include "tests/test_util.h"

using namespace est;
using est::distribute::BufferSync;
using est::distribute::MirroredStrategy;
using est::testing::FreshTempDir;
using est::testing::MessageMatches;

namespace {

std::shared_ptr<const nlohmann::json> NoParams() {
  return std::make_shared<const nlohmann::json>(nlohmann::json::object());
}

// Creates "dense" (Linear 2 → 1) and a buffer "count" on replica `r`, as model_fn would.
torch::nn::Linear Build(ReplicaSet& replicas, int r) {
  auto dense = replicas.replica(r).module("dense", [] { return torch::nn::Linear(2, 1); });
  replicas.replica(r).buffer("count", [] { return at::zeros({3}); });
  return dense;
}

}  // namespace

TEST_CASE("every local replica starts as replica 0 does", "[estimator]") {
  MirroredStrategy strategy({"cpu", "cpu", "cpu"});
  ReplicaSet replicas(strategy, NoParams(), nullptr, false, nullptr);
  REQUIRE(replicas.size() == 3);
  torch::manual_seed(1);
  auto first = Build(replicas, 0);
  for (int r = 1; r < 3; ++r) {
    torch::manual_seed(100 + r);  // other random initial values, replaced by replica 0's
    auto other = Build(replicas, r);
    CHECK(at::equal(other->weight, first->weight));
    CHECK(at::equal(other->bias, first->bias));
    CHECK(other->weight.data_ptr() != first->weight.data_ptr());
  }
}

TEST_CASE("replica 0 restores from the checkpoint and the others copy it", "[estimator]") {
  const std::string dir = FreshTempDir("replica_set_restore").string();
  const at::Tensor weight = torch::tensor({{0.25f, -0.5f}});
  const at::Tensor bias = torch::tensor({2.0f});
  checkpoint::WriteCheckpoint(dir + "/model.ckpt-5",
                              {{"dense/weight", weight}, {"dense/bias", bias}, {"count", at::ones({3})}}, {}, 5);
  auto reader = std::make_shared<const checkpoint::CheckpointReader>(dir + "/model.ckpt-5");
  MirroredStrategy strategy({"cpu", "cpu"});
  ReplicaSet replicas(strategy, NoParams(), reader, true, nullptr);
  for (int r = 0; r < 2; ++r) {
    auto dense = Build(replicas, r);
    CHECK(at::equal(dense->weight, weight));
    CHECK(at::equal(dense->bias, bias));
    CHECK(at::equal(replicas.replica(r).buffers().back(), at::ones({3})));
  }
}

TEST_CASE("a replica that creates state replica 0 lacks, or of another shape, is a ModelError", "[estimator]") {
  MirroredStrategy strategy({"cpu", "cpu"});
  ReplicaSet replicas(strategy, NoParams(), nullptr, false, nullptr);
  replicas.replica(0).module("dense", [] { return torch::nn::Linear(2, 1); });
  CHECK_THROWS_MATCHES(replicas.replica(1).module("extra", [] { return torch::nn::Linear(2, 1); }), ModelError,
                       MessageMatches(Catch::Contains("replica 1 created variable 'extra/weight'")));
  CHECK_THROWS_MATCHES(replicas.replica(1).module("dense", [] { return torch::nn::Linear(3, 1); }), ModelError,
                       MessageMatches(Catch::Contains("variable 'dense/weight' has shape [1, 3] on replica 1")));
}

TEST_CASE("sync_buffers follows the strategy's BufferSync", "[estimator]") {
  // Replica r's float buffer holds r + 1 and its integer buffer 10 (r + 1).
  auto run = [](BufferSync sync) {
    MirroredStrategy strategy({"cpu", "cpu", "cpu"}, sync);
    ReplicaSet replicas(strategy, NoParams(), nullptr, false, nullptr);
    std::vector<std::pair<at::Tensor, at::Tensor>> buffers;
    for (int r = 0; r < 3; ++r) {
      at::Tensor& real = replicas.replica(r).buffer("mean", [] { return at::zeros({2}); });
      at::Tensor& count = replicas.replica(r).buffer("count", [] { return at::zeros({1}, at::kLong); });
      real.fill_(r + 1);
      count.fill_(10 * (r + 1));
      buffers.emplace_back(real, count);
    }
    replicas.sync_buffers();
    return buffers;
  };
  SECTION("kBroadcast: every replica takes replica 0's values") {
    for (const auto& [real, count] : run(BufferSync::kBroadcast)) {
      CHECK(at::equal(real, at::full({2}, 1.0f)));
      CHECK(count.item<int64_t>() == 10);
    }
  }
  SECTION("kAverage: floating buffers become their mean, the others replica 0's") {
    for (const auto& [real, count] : run(BufferSync::kAverage)) {
      CHECK(at::equal(real, at::full({2}, 2.0f)));
      CHECK(count.item<int64_t>() == 10);
    }
  }
  SECTION("kNone: every replica keeps its own") {
    const auto buffers = run(BufferSync::kNone);
    for (int r = 0; r < 3; ++r) {
      CHECK(at::equal(buffers[static_cast<size_t>(r)].first, at::full({2}, static_cast<float>(r + 1))));
      CHECK(buffers[static_cast<size_t>(r)].second.item<int64_t>() == 10 * (r + 1));
    }
  }
}
