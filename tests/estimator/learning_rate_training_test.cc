// EstimatorSpec::learning_rate: the framework sets the scheduled rate before every step, writes
// it to TensorBoard, and a restored job continues the schedule exactly.

#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "estimator/estimator.h"
#include "estimator/estimator_spec.h"
#include "estimator/model_context.h"
#include "estimator/run_config.h"
#include "estimator/schedules/decay_schedules.h"
#include "estimator/summary/event_reader.h"
#include "tests/estimator/test_models.h"
#include "tests/test_util.h"

using namespace est;

namespace {

// A warmup of 4 steps to 0.1, then 0.01 from 4 steps after the warmup.
schedules::LearningRateSchedule WarmupThenStep() {
  return schedules::LinearWarmup(schedules::PiecewiseConstantDecay({3}, {0.1, 0.01}), 4);
}

struct Weights : torch::nn::Module {
  at::Tensor w = register_parameter("w", torch::tensor({0.5, -0.25, 2.0}, torch::kDouble));
};

// The gradient of loss = sum(w * kSlope) is kSlope at every step, so plain SGD's update is
// exactly -lr * kSlope.
const at::Tensor& Slope() {
  static const at::Tensor slope = torch::tensor({1.0, 2.0, -1.0}, torch::kDouble);
  return slope;
}

EstimatorSpec ConstantSlopeModelFn(const Features& features, const at::Tensor&, Mode, ModelContext& ctx) {
  auto weights = ctx.module("weights", [] { return std::make_shared<Weights>(); });
  auto loss = (weights->w * Slope()).sum() + 0 * features.at("x").sum();
  auto& sgd = ctx.optimizer("sgd", [&] { return torch::optim::SGD(weights->parameters(), /*lr=*/123.0); });
  return EstimatorSpec::Train(loss, sgd).learning_rate(WarmupThenStep());
}

EstimatorSpec AdamWithWarmupModelFn(const Features& features, const at::Tensor& labels, Mode mode,
                                    ModelContext& ctx) {
  EstimatorSpec spec = testing::RegressionModelFn(features, labels, mode, ctx);
  if (mode == Mode::kTrain)
    spec.learning_rate(schedules::LinearWarmup(schedules::CosineDecay(0.05, 30, 0.1), 10, 0.001));
  return spec;
}

data::Dataset Regression(Mode, const distribute::InputContext&) { return testing::RegressionData(8, true); }

RunConfig QuietConfig(int64_t save_summary_steps = 0) {
  RunConfig config;
  config.tf_random_seed = 5;  // the same initial values in every run
  config.save_summary_steps = save_summary_steps;
  config.log_step_count_steps = 1000;
  return config;
}

}  // namespace

TEST_CASE("Each step applies the schedule's rate at its global step", "[estimator][schedules]") {
  const std::string dir = testing::FreshTempDir("lr_schedule_steps").string();
  Estimator estimator(ConstantSlopeModelFn, dir, QuietConfig(/*save_summary_steps=*/1));
  estimator.train(Regression, TrainOptions().max_steps(10));

  // SGD's update, step by step, with the rate the schedule gives each step.
  const schedules::LearningRateSchedule schedule = WarmupThenStep();
  at::Tensor expected = torch::tensor({0.5, -0.25, 2.0}, torch::kDouble);
  std::vector<double> rates;
  for (int64_t step = 0; step < 10; ++step) {
    rates.push_back(schedule(step));
    expected.add_(Slope(), -schedule(step));
  }
  const std::vector<double> expected_rates{0.0, 0.025, 0.05, 0.075, 0.1, 0.1, 0.1, 0.1, 0.01, 0.01};
  for (size_t step = 0; step < rates.size(); ++step) CHECK(rates[step] == Approx(expected_rates[step]));
  CHECK(torch::equal(estimator.get_variable_value("weights/w"), expected));

  // TensorBoard gets the rate of each step, at the global step after it (as the loss).
  const std::vector<std::string> files = ListEventFiles(dir);
  REQUIRE(files.size() == 1);
  std::vector<std::pair<int64_t, double>> written;
  for (const ScalarEvent& event : ReadScalarEvents(files.front()))
    if (event.tag == "learning_rate") written.emplace_back(event.step, event.value);
  REQUIRE(written.size() == 10);
  for (int64_t step = 1; step <= 10; ++step) {
    CHECK(written[static_cast<size_t>(step - 1)].first == step);
    CHECK(written[static_cast<size_t>(step - 1)].second ==
          Approx(rates[static_cast<size_t>(step - 1)]).epsilon(1e-7));
  }
}

TEST_CASE("A job restored in the warmup continues the schedule bit for bit", "[estimator][schedules]") {
  Estimator straight(AdamWithWarmupModelFn, testing::FreshTempDir("lr_schedule_straight").string(), QuietConfig());
  straight.train(Regression, TrainOptions().max_steps(16));

  const std::string dir = testing::FreshTempDir("lr_schedule_restored").string();
  Estimator(AdamWithWarmupModelFn, dir, QuietConfig()).train(Regression, TrainOptions().max_steps(6));
  Estimator restored(AdamWithWarmupModelFn, dir, QuietConfig());
  restored.train(Regression, TrainOptions().max_steps(16));

  CHECK(restored.get_variable_value("global_step").item<int64_t>() == 16);
  for (const std::string name : {"linear/weight", "linear/bias"}) {
    INFO(name);
    CHECK(torch::equal(restored.get_variable_value(name), straight.get_variable_value(name)));
  }
}

TEST_CASE("An optimizer whose options cannot set the rate is refused, naming the schedule",
          "[estimator][schedules]") {
  struct FixedRateOptions : torch::optim::OptimizerCloneableOptions<FixedRateOptions> {};
  struct FixedRate : torch::optim::Optimizer {
    explicit FixedRate(std::vector<at::Tensor> parameters)
        : Optimizer({torch::optim::OptimizerParamGroup(std::move(parameters))},
                    std::make_unique<FixedRateOptions>()) {}
    at::Tensor step(LossClosure) override { return {}; }
  };
  auto model_fn = [](const Features& features, const at::Tensor&, Mode, ModelContext& ctx) {
    auto weights = ctx.module("weights", [] { return std::make_shared<Weights>(); });
    auto& fixed = ctx.optimizer("fixed", [&] { return FixedRate(weights->parameters()); });
    return EstimatorSpec::Train((weights->w * Slope()).sum() + 0 * features.at("x").sum(), fixed)
        .learning_rate(schedules::Constant(0.5));
  };
  Estimator estimator(model_fn, testing::FreshTempDir("lr_schedule_fixed").string(), QuietConfig());
  CHECK_THAT(testing::ErrorMessageOf<ModelError>([&] { estimator.train(Regression, TrainOptions().max_steps(2)); }),
             Catch::Contains("learning-rate schedule Constant(0.5) cannot set the optimizer's learning rate"));
}
