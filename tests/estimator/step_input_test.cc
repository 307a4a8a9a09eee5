// StepInput: a worker's logical shards, and their regrouping after the training group changed.

#include "estimator/step_input.h"

#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <map>
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

TEST_CASE("Across a newcomer's joining, every example of the epoch is read once", "[estimator]") {
  // Workers A and B hold shards {0, 2} and {1, 3}; they train step 1 and read step 2 ahead.
  // Then newcomer C joins at position 1: A gives it shard 2 (what A read ahead of it is
  // dropped), and C opens shard 2 at the position. Counted over the epoch, every example once.
  std::map<int64_t, int> seen;
  const auto count = [&](const std::vector<Element>& batches) {
    for (const Element& batch : batches)
      for (int64_t i = 0; i < batch.labels.size(0); ++i) ++seen[batch.labels[i].item<int64_t>()];
  };
  StepInput a = StepInput::LogicalShards(CountingInput(), 4, {0, 2}, 1);
  StepInput b = StepInput::LogicalShards(CountingInput(), 4, {1, 3}, 1);
  std::vector<Element> step_a(2), step_b(2), ahead_a(2), ahead_b(2);
  REQUIRE(a.read(step_a, 1));
  REQUIRE(b.read(step_b, 1));
  count(step_a);
  count(step_b);
  REQUIRE(a.read(ahead_a, 2));
  REQUIRE(b.read(ahead_b, 2));
  auto [a_after, a_reached] = std::move(a).Regroup(CountingInput(), {0}, 1, {&ahead_a});
  auto [b_after, b_reached] = std::move(b).Regroup(CountingInput(), {1, 3}, 1, {&ahead_b});
  StepInput c = StepInput::LogicalShards(CountingInput(), 4, {2}, 1);
  CHECK(a_reached == 1);
  CHECK(b_reached == 1);
  CHECK(c.skip_to(1, 2, [](const Element&) {}) == 1);
  int steps = 0;
  for (StepInput* input : {&a_after, &b_after, &c}) {
    std::vector<Element> step(input->batches_per_step());
    for (int64_t s = 2; input->read(step, s); ++s, ++steps) count(step);
  }
  CHECK(steps == 3 * 4);  // 4 more steps of each worker: 5 batches a shard
  CHECK(seen.size() == 40);
  for (const auto& [example, times] : seen) {
    INFO("example " << example);
    CHECK(times == 1);
  }
  CHECK(seen.begin()->first == 0);
  CHECK(seen.rbegin()->first == 39);
}

TEST_CASE("LogicalShardsOfWorker deals shards round robin and needs one per worker", "[estimator]") {
  CHECK(est::LogicalShardsOfWorker(6, 3, 1) == std::vector<int>{1, 4});
  CHECK(est::LogicalShardsOfWorker(3, 2, 0) == std::vector<int>{0, 2});
  CHECK_THROWS_WITH(est::LogicalShardsOfWorker(2, 3, 0), Catch::Contains("2 logical shards, fewer than the 3 workers"));
}
