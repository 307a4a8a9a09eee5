// ReplicaSet: local replicas that start equal (restored, then copied from replica 0), and
// state that must match across replicas.

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
  ReplicaSet replicas(strategy, NoParams(), {}, nullptr);
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
  ReplicaSet replicas(strategy, NoParams(), RestoreFromCheckpoint(reader, RestoreMode::kTraining), nullptr);
  for (int r = 0; r < 2; ++r) {
    auto dense = Build(replicas, r);
    CHECK(at::equal(dense->weight, weight));
    CHECK(at::equal(dense->bias, bias));
    CHECK(at::equal(replicas.replica(r).buffers().back(), at::ones({3})));
  }
}

TEST_CASE("a replica that creates state replica 0 lacks, or of another shape, is a ModelError", "[estimator]") {
  MirroredStrategy strategy({"cpu", "cpu"});
  ReplicaSet replicas(strategy, NoParams(), {}, nullptr);
  replicas.replica(0).module("dense", [] { return torch::nn::Linear(2, 1); });
  CHECK_THROWS_MATCHES(replicas.replica(1).module("extra", [] { return torch::nn::Linear(2, 1); }), ModelError,
                       MessageMatches(Catch::Contains("replica 1 created variable 'extra/weight'")));
  CHECK_THROWS_MATCHES(replicas.replica(1).module("dense", [] { return torch::nn::Linear(3, 1); }), ModelError,
                       MessageMatches(Catch::Contains("variable 'dense/weight' has shape [1, 3] on replica 1")));
}
