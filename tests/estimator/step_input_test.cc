// StepInput: a worker's logical shards, and their regrouping after the training group changed.

#include "estimator/step_input.h"

#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <vector>

namespace {

using est::StepInput;
using est::data::Element;

// 4 logical shards of the examples 0..39: shard s holds s, s + 4, …, in batches of 2.
est::InputFn CountingInput() {
  return [](est::Mode, const est::distribute::InputContext& context) {
    return est::data::Dataset::FromTensors({{"x", at::arange(40, at::kLong)}}, at::arange(40, at::kLong))
        .shard(context.num_input_pipelines(), context.input_pipeline_id())
        .batch(2);
  };
}

// The first label of each batch.
std::vector<int64_t> Firsts(const std::vector<Element>& batches) {
  std::vector<int64_t> firsts;
  for (const Element& batch : batches) firsts.push_back(batch.labels[0].item<int64_t>());
  return firsts;
}

}  // namespace

TEST_CASE("StepInput regrouped keeps its shards where they were read, and opens new ones at the position",
          "[estimator]") {
  // Worker 0 of 2 holds shards 0 and 2; it reads 2 steps (the second read ahead, the step that
  // failed not trained on), then takes shard 3 of a lost worker as well.
  StepInput input = StepInput::LogicalShards(CountingInput(), 4, {0, 2}, 1);
  std::vector<Element> first(2), failed(2), ahead(2);
  REQUIRE(input.read(first, 1));
  CHECK(Firsts(first) == std::vector<int64_t>{0, 2});
  REQUIRE(input.read(failed, 2));
  REQUIRE(input.read(ahead, 3));
  CHECK(Firsts(failed) == std::vector<int64_t>{8, 10});
  CHECK(Firsts(ahead) == std::vector<int64_t>{16, 18});
  // The chief's position is 1 step (1 batch of each shard): the failed step is taken again.
  auto [regrouped, reached] = std::move(input).Regroup(CountingInput(), {0, 2, 3}, 1, {&failed, &ahead});
  CHECK(reached == 1);
  CHECK(regrouped.shards() == std::vector<int>{0, 2, 3});
  CHECK(regrouped.batches_per_step() == 3);
  std::vector<Element> step(3);
  REQUIRE(regrouped.read(step, 2));
  CHECK(Firsts(step) == std::vector<int64_t>{8, 10, 11});
  REQUIRE(regrouped.read(step, 3));
  CHECK(Firsts(step) == std::vector<int64_t>{16, 18, 19});
  REQUIRE(regrouped.read(step, 4));  // past what was read ahead: from the iterators again
  CHECK(Firsts(step) == std::vector<int64_t>{24, 26, 27});
  // A shard that ends before the position is reported.
  StepInput short_input = StepInput::LogicalShards(CountingInput(), 4, {1}, 1);
  auto [past_end, short_reached] = std::move(short_input).Regroup(CountingInput(), {0, 1}, 7, {});
  CHECK(short_reached == 5);  // shard 0 has 10 examples: 5 batches
  CHECK(past_end.shards() == std::vector<int>{0, 1});
}

TEST_CASE("LogicalShardsOfWorker deals shards round robin and needs one per worker", "[estimator]") {
  CHECK(est::LogicalShardsOfWorker(6, 3, 1) == std::vector<int>{1, 4});
  CHECK(est::LogicalShardsOfWorker(3, 2, 0) == std::vector<int>{0, 2});
  CHECK_THROWS_WITH(est::LogicalShardsOfWorker(2, 3, 0), Catch::Contains("2 logical shards, fewer than the 3 workers"));
}
