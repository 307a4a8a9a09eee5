// MirroredStrategy with two CPU replicas trains and evaluates like one replica with the
// same global batch.

#include <torch/torch.h>

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "distribute/strategy.h"
#include "estimator/estimator.h"
#include "estimator/metrics/mean_squared_error.h"
#include "estimator/summary/event_reader.h"
#include "tests/estimator/test_models.h"
#include "tests/test_util.h"

#include <catch2/catch.hpp>

// The file's own names, apart from those of the tests compiled with it in one unit.
namespace mirrored_training_test {
using namespace est;

namespace {

EstimatorSpec SgdRegression(const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
  auto net = ctx.module("net", [] {
    return torch::nn::Sequential(torch::nn::Linear(2, 8), torch::nn::Tanh(), torch::nn::Linear(8, 1));
  });
  auto predictions = net->forward(features.at("x")).squeeze(1);
  auto loss = torch::mse_loss(predictions, labels);
  if (mode == Mode::kEval) return EstimatorSpec::Eval(loss, {{"mse", metrics::MeanSquaredError(labels, predictions)}});
  auto& sgd = ctx.optimizer("sgd", [&] { return torch::optim::SGD(net->parameters(), 0.1); });
  return EstimatorSpec::Train(loss, sgd).summary("mean_prediction", predictions.mean());
}

// 96 fixed examples; the global batch of 16 is split evenly over the replicas in sync.
data::Dataset Input(Mode mode, const distribute::InputContext& input) {
  auto x = torch::linspace(-2, 2, 192).reshape({96, 2});
  auto y = torch::sin(x.select(1, 0)) + 0.5 * x.select(1, 1);
  auto dataset = data::Dataset::FromTensors({{"x", x}}, y).shard(input.num_input_pipelines(), input.input_pipeline_id());
  if (mode == Mode::kTrain) dataset = dataset.shuffle(96, 5).repeat();
  return dataset.batch(input.per_replica_batch_size(16));
}

RunConfig Config(std::shared_ptr<distribute::Strategy> strategy) {
  RunConfig config;
  config.tf_random_seed = 11;
  config.save_checkpoints_steps = 5;
  config.save_summary_steps = 1;
  config.train_distribute = std::move(strategy);
  return config;
}

}  // namespace

TEST_CASE("MirroredStrategy with 2 CPU replicas equals 1 replica with the same global batch", "[distribute][estimator]") {
  const std::string single_dir = est::testing::FreshTempDir("mirrored_single").string();
  const std::string mirrored_dir = est::testing::FreshTempDir("mirrored_two").string();
  Estimator single(SgdRegression, single_dir, Config(nullptr));
  single.train(Input, TrainOptions().max_steps(20));
  auto two_replicas = distribute::MirroredStrategy::Create({"cpu", "cpu"});
  REQUIRE(two_replicas->num_replicas_in_sync() == 2);
  Estimator mirrored(SgdRegression, mirrored_dir, Config(two_replicas));
  mirrored.train(Input, TrainOptions().max_steps(20));

  CHECK(mirrored.get_variable_value("global_step").item<int64_t>() == 20);
  CHECK(est::testing::MaxRelativeDifference(single, mirrored) <= 1e-5);

  // The logged loss is the mean over replicas: the same curve as one replica's.
  auto losses = [](const std::string& dir) {
    std::map<int64_t, double> by_step;
    for (const auto& event : ReadScalarEvents(ListEventFiles(dir).at(0)))
      if (event.tag == "loss") by_step[event.step] = event.value;
    return by_step;
  };
  auto single_losses = losses(single_dir);
  auto mirrored_losses = losses(mirrored_dir);
  REQUIRE(single_losses.size() == 20);
  REQUIRE(mirrored_losses.size() == 20);
  for (const auto& [step, value] : single_losses) CHECK(mirrored_losses.at(step) == Approx(value).epsilon(1e-5));

  // Evaluation aggregates the metric over both replicas: the same result as one replica.
  EvalResult one = single.evaluate(Input);
  EvalResult both = mirrored.evaluate(Input);
  CHECK(both.at("mse") == Approx(one.at("mse")).epsilon(1e-5));
  CHECK(both.at("loss") == Approx(one.at("loss")).epsilon(1e-5));
}

TEST_CASE("MirroredStrategy rejects a global batch its replicas cannot share", "[distribute][estimator]") {
  auto three = distribute::MirroredStrategy::Create({"cpu", "cpu", "cpu"});
  Estimator estimator(SgdRegression, est::testing::FreshTempDir("mirrored_three").string(), Config(three));
  CHECK_THROWS_MATCHES(estimator.train(Input, TrainOptions().max_steps(1)), ConfigError,
                       est::testing::MessageMatches(Catch::Contains("16") && Catch::Contains("3")));
}

namespace {

// A regression net with BatchNorm, whose running statistics each replica updates from its
// own share of the batch; `captured` receives each replica's buffers at its first call, in
// the order the replicas run (replica 0 first).
using CapturedBuffers = std::vector<std::pair<const ModelContext*, std::vector<at::Tensor>>>;
ModelFn BatchNormRegression(CapturedBuffers* captured) {
  return [captured](const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
    auto net = ctx.module("net", [] {
      return torch::nn::Sequential(torch::nn::Linear(2, 4), torch::nn::BatchNorm1d(4), torch::nn::Linear(4, 1));
    });
    const bool seen = std::any_of(captured->begin(), captured->end(), [&](const auto& c) { return c.first == &ctx; });
    if (!seen) captured->emplace_back(&ctx, ctx.buffers());
    auto loss = torch::mse_loss(net->forward(features.at("x")).squeeze(1), labels);
    auto& sgd = ctx.optimizer("sgd", [&] { return torch::optim::SGD(net->parameters(), 0.05); });
    return EstimatorSpec::Train(loss, sgd);
  };
}

}  // namespace

TEST_CASE("MirroredStrategy keeps BatchNorm's running statistics equal on its replicas, as its BufferSync says",
          "[distribute][estimator]") {
  for (auto sync : {distribute::BufferSync::kBroadcast, distribute::BufferSync::kAverage, distribute::BufferSync::kNone}) {
    INFO("buffer sync " << distribute::BufferSyncName(sync));
    const std::string dir = est::testing::FreshTempDir("mirrored_buffers").string();
    CapturedBuffers captured;
    Estimator estimator(BatchNormRegression(&captured), dir,
                        Config(distribute::MirroredStrategy::Create({"cpu", "cpu"}, sync)));
    estimator.train(Input, TrainOptions().max_steps(8));
    REQUIRE(captured.size() == 2);
    const std::vector<at::Tensor>& first = captured[0].second;
    const std::vector<at::Tensor>& second = captured[1].second;
    REQUIRE(first.size() == 3);  // running_mean, running_var, num_batches_tracked
    const bool equal = at::equal(first[0], second[0]) && at::equal(first[1], second[1]);
    CHECK(equal == (sync != distribute::BufferSync::kNone));
    CHECK(first[2].item<int64_t>() == 8);
    // The checkpoint holds what the chief's first replica holds.
    CHECK(at::equal(estimator.get_variable_value("net/1.running_mean"), first[0]));
    CHECK(at::equal(estimator.get_variable_value("net/1.running_var"), first[1]));
  }
}

}  // namespace mirrored_training_test
