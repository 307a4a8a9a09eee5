// Placement: the plan is the same for the same variables in any order of computation,
// balanced by bytes, and cuts big variables along dimension 0 as TensorFlow's partitioners do.

#include "distribute/parameter_server/placement.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>

#include "common/error.h"

using namespace est::distribute;

namespace {

VariableInfo Variable(std::string name, std::vector<int64_t> shape, c10::ScalarType dtype = c10::ScalarType::Float) {
  return VariableInfo{std::move(name), std::move(shape), dtype};
}

// The variables of the Fashion-MNIST CNN and a 21 M-parameter MLP's first layer.
std::vector<VariableInfo> Model() {
  return {Variable("cnn/conv1.weight", {32, 1, 3, 3}), Variable("cnn/conv1.bias", {32}),
          Variable("cnn/conv2.weight", {64, 32, 3, 3}), Variable("cnn/conv2.bias", {64}),
          Variable("cnn/fc1.weight", {128, 3136}),      Variable("cnn/fc1.bias", {128}),
          Variable("cnn/fc2.weight", {10, 128}),        Variable("cnn/fc2.bias", {10}),
          Variable("embedding", {4096, 1024}),          Variable("scale", {}, c10::ScalarType::Double)};
}

}  // namespace

TEST_CASE("placement is a function of the variables alone", "[distribute][ps]") {
  const Placement a(Model(), PlacementOptions().num_ps(3));
  const Placement b(Model(), PlacementOptions().num_ps(3));
  REQUIRE(a.shards().size() == b.shards().size());
  for (size_t i = 0; i < a.shards().size(); ++i) {
    CHECK(a.shards()[i].ps == b.shards()[i].ps);
    CHECK(a.shards()[i].rows == b.shards()[i].rows);
  }
  CHECK(a.fingerprint() == b.fingerprint());
  CHECK(a.fingerprint() != Placement(Model(), PlacementOptions().num_ps(2)).fingerprint());
  auto renamed = Model();
  renamed[1].name = "cnn/conv1.b";
  CHECK(a.fingerprint() != Placement(renamed, PlacementOptions().num_ps(3)).fingerprint());
}

TEST_CASE("big variables are cut along dimension 0 as MinSizePartitioner cuts them", "[distribute][ps]") {
  // embedding: 16 MiB; 256 KiB shards would be 64, capped at max_shards = num_ps = 3.
  const Placement placement(Model(), PlacementOptions().num_ps(3));
  const std::vector<int> parts = placement.shards_of_variable(8);
  REQUIRE(parts.size() == 3);
  // 4096 rows in 3: the first shard gets the extra row, as TensorFlow slices.
  CHECK(placement.shards()[parts[0]].rows == 1366);
  CHECK(placement.shards()[parts[1]].rows == 1365);
  CHECK(placement.shards()[parts[2]].rows == 1365);
  CHECK(placement.shards()[parts[1]].row_begin == 1366);
  CHECK(placement.shards()[parts[2]].shape == std::vector<int64_t>{1365, 1024});
  // fc1.weight is 1.53 MiB: 6 shards by size, capped at 3. conv2.weight (72 KiB) stays whole.
  CHECK(placement.shards_of_variable(4).size() == 3);
  CHECK(placement.shards_of_variable(2).size() == 1);
  // The three parts of the embedding land on three different tasks.
  CHECK(placement.shards()[parts[0]].ps != placement.shards()[parts[1]].ps);
  CHECK(placement.shards()[parts[1]].ps != placement.shards()[parts[2]].ps);
  CHECK(placement.shards()[parts[0]].ps != placement.shards()[parts[2]].ps);

  // max_shards beyond the ps count, and a variable with fewer rows than shards.
  const Placement many({Variable("e", {4096, 1024}), Variable("tall", {3, 1 << 20})},
                       PlacementOptions().num_ps(2).max_shards(8));
  CHECK(many.shards_of_variable(0).size() == 8);
  CHECK(many.shards_of_variable(1).size() == 3);
  // Bytes are conserved.
  int64_t total = 0;
  for (const Shard& shard : many.shards()) total += shard.bytes;
  CHECK(total == 4096 * 1024 * 4 + 3 * (1 << 20) * 4);
}

TEST_CASE("FixedShardsPartitioner cuts every variable above the threshold into the same count", "[distribute][ps]") {
  const Placement placement(Model(), PlacementOptions().num_ps(2).fixed_shards(4));
  CHECK(placement.shards_of_variable(8).size() == 4);  // embedding
  CHECK(placement.shards_of_variable(4).size() == 4);  // fc1.weight
  CHECK(placement.shards_of_variable(2).size() == 1);  // conv2.weight, under 2 × 256 KiB
  CHECK(placement.shards_of_variable(9).size() == 1);  // a scalar
  CHECK(placement.shards()[placement.shards_of_variable(9)[0]].shape.empty());
}

TEST_CASE("placement balances bytes over the ps tasks greedily", "[distribute][ps]") {
  for (int num_ps : {1, 2, 3, 4}) {
    const Placement placement(Model(), PlacementOptions().num_ps(num_ps));
    const std::vector<int64_t> bytes = placement.bytes_per_ps();
    const int64_t total = std::accumulate(bytes.begin(), bytes.end(), int64_t{0});
    CHECK(total == (32 * 9 + 32 + 64 * 32 * 9 + 64 + 128 * 3136 + 128 + 1280 + 10 + 4096 * 1024) * 4 + 8);
    INFO("num_ps " << num_ps << ": " << placement.describe());
    CHECK(placement.imbalance() < 1.15);
  }
  // Greedy on known sizes: 5, 4, 3, 3 (units of 256 KiB rows) over two tasks: {5, 3} and {4, 3}.
  const int64_t unit = 256 << 10;
  const Placement small({Variable("a", {3 * unit / 4}), Variable("b", {5 * unit / 4}), Variable("c", {unit}),
                         Variable("d", {3 * unit / 4})},
                        PlacementOptions().num_ps(2).min_shard_bytes(int64_t{1} << 40));
  CHECK(small.shards()[1].ps == 0);  // b (5) first, to task 0
  CHECK(small.shards()[2].ps == 1);  // c (4) to task 1
  CHECK(small.shards()[0].ps == 1);  // a (3) to the lighter task 1 (4 < 5)
  CHECK(small.shards()[3].ps == 0);  // d (3): task 0 holds 5, task 1 holds 7
  CHECK(small.imbalance() == Approx(8.0 / 7.0));
  // A task that holds nothing.
  CHECK(std::isinf(Placement({Variable("only", {4})}, PlacementOptions().num_ps(2)).imbalance()));
}

TEST_CASE("bad placement options are ConfigErrors naming the option", "[distribute][ps]") {
  CHECK_THROWS_WITH(Placement(Model(), PlacementOptions().num_ps(0)), Catch::Contains("num_ps is 0"));
  CHECK_THROWS_WITH(Placement(Model(), PlacementOptions().min_shard_bytes(0)), Catch::Contains("min_shard_bytes is 0"));
  CHECK_THROWS_WITH(Placement(Model(), PlacementOptions().max_shards(-1)), Catch::Contains("must not be negative"));
  CHECK_THROWS_AS(Placement({Variable("x", {2}), Variable("x", {3})}, PlacementOptions()), est::ConfigError);
}
