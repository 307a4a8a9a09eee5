// WarmStartSettings: a new model takes chosen variables of another model's checkpoint, under
// their old names, and the optimizers' state only when asked.

#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <string>

#include "estimator/estimator.h"
#include "tests/estimator/test_models.h"
#include "tests/test_util.h"

// The file's own names, apart from those of the tests compiled with it in one unit.
namespace warm_start_test {
using namespace est;

namespace {

// FormulaNet under params["net"] (a body) and a Linear(1, 1) head on its output, trained by
// Adam at params["learning_rate"]; a buffer counts the training steps.
EstimatorSpec BodyAndHead(const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
  auto body = ctx.module(ctx.params().value("net", std::string("net")), testing::FormulaNet);
  auto head = ctx.module("head", [] {
    return testing::FillFromFormula(torch::nn::Sequential(torch::nn::Linear(1, 1)), 0.4, 0.5);
  });
  at::Tensor& steps = ctx.buffer("steps", [] { return torch::zeros({}, torch::kLong); });
  auto loss = torch::mse_loss(head->forward(body->forward(features.at("x"))).squeeze(1), labels);
  if (mode == Mode::kEval) return EstimatorSpec::Eval(loss);
  steps.add_(1);
  std::vector<at::Tensor> variables = body->parameters();
  for (const auto& parameter : head->parameters()) variables.push_back(parameter);
  const double rate = ctx.params().value("learning_rate", 0.01);
  auto& adam = ctx.optimizer("adam", [&] { return torch::optim::Adam(variables, rate); });
  return EstimatorSpec::Train(loss, adam);
}

// All 128 examples in every batch: a step's update depends on the weights and the
// optimizer's state alone.
data::Dataset FullBatch(Mode mode, const distribute::InputContext& input) { return testing::InputOfBatch(mode, input, 128); }

RunConfig Config() {
  RunConfig config;
  config.save_summary_steps = 0;
  config.log_step_count_steps = 1000;
  return config;
}

// A model_dir trained 5 steps with the body named "old_net".
std::string TrainedSource() {
  const std::string dir = testing::FreshTempDir("warm_source").string();
  Estimator(BodyAndHead, dir, Config(), nlohmann::json{{"net", "old_net"}})
      .train(FullBatch, TrainOptions().max_steps(5));
  return dir;
}

}  // namespace

TEST_CASE("Warm-starting a subset of the variables under their old names leaves the others as made",
          "[estimator][warm_start]") {
  const std::string source = TrainedSource();
  const Estimator trained(BodyAndHead, source, Config());
  const auto settings = WarmStartSettings(source)
                            .vars_to_warm_start({"net/.*"})
                            .var_name_to_prev_var_name({{"net/0.weight", "old_net/0.weight"},
                                                        {"net/0.bias", "old_net/0.bias"},
                                                        {"net/2.weight", "old_net/2.weight"},
                                                        {"net/2.bias", "old_net/2.bias"}});
  Estimator warm(BodyAndHead, testing::FreshTempDir("warm_subset").string(), Config(),
                 nlohmann::json{{"learning_rate", 0.0}}, settings);
  warm.train(FullBatch, TrainOptions().max_steps(1));
  CHECK(warm.get_variable_value("global_step").item<int64_t>() == 1);
  for (const std::string name : {"0.weight", "0.bias", "2.weight", "2.bias"}) {
    INFO(name);
    CHECK(torch::equal(warm.get_variable_value("net/" + name), trained.get_variable_value("old_net/" + name)));
  }
  // The head was not chosen: it starts from model_fn's values; the step counter, a buffer, too.
  const auto head = testing::FillFromFormula(torch::nn::Sequential(torch::nn::Linear(1, 1)), 0.4, 0.5);
  CHECK(torch::equal(warm.get_variable_value("head/0.weight"), head->named_parameters()["0.weight"]));
  CHECK(warm.get_variable_value("steps").item<int64_t>() == 1);
  CHECK(trained.get_variable_value("steps").item<int64_t>() == 5);
}

TEST_CASE("Optimizer state and buffers are warm-started only when asked", "[estimator][warm_start]") {
  const std::string source = TrainedSource();
  Estimator ten_steps(BodyAndHead, testing::FreshTempDir("warm_ten").string(), Config(),
                      nlohmann::json{{"net", "old_net"}});
  ten_steps.train(FullBatch, TrainOptions().max_steps(10));

  auto warm = [&](bool optimizers) {
    const auto settings = WarmStartSettings(source).warm_start_optimizers(optimizers).warm_start_buffers(optimizers);
    Estimator estimator(BodyAndHead, testing::FreshTempDir("warm_state").string(), Config(),
                        nlohmann::json{{"net", "old_net"}}, settings);
    estimator.train(FullBatch, TrainOptions().max_steps(5));
    return estimator.get_variable_value("old_net/0.weight");
  };
  // With Adam's moments and step count, 5 more steps are the 10-step run's steps 6 to 10.
  CHECK(torch::equal(warm(true), ten_steps.get_variable_value("old_net/0.weight")));
  CHECK_FALSE(torch::equal(warm(false), ten_steps.get_variable_value("old_net/0.weight")));
}

TEST_CASE("Bad warm-start settings name what is wrong", "[estimator][warm_start]") {
  const std::string source = TrainedSource();
  const auto renamed = WarmStartSettings(source).var_name_to_prev_var_name({{"net/0.weight", "old_net/0.kernel"}});
  Estimator estimator(BodyAndHead, testing::FreshTempDir("warm_bad").string(), Config(), nlohmann::json::object(),
                      renamed);
  CHECK_THAT(testing::ErrorMessageOf<CheckpointError>([&] { estimator.train(FullBatch, TrainOptions().max_steps(1)); }),
             Catch::Contains("warm-starting variable 'net/0.weight' from 'old_net/0.kernel': checkpoint") &&
                 Catch::Contains("has no 'old_net/0.kernel'"));
  CHECK_THAT(testing::ErrorMessageOf<ConfigError>([&] {
               Estimator(BodyAndHead, testing::FreshTempDir("warm_regex").string(), Config(), nlohmann::json::object(),
                         WarmStartSettings(source).vars_to_warm_start({"net/(.*"}));
             }),
             Catch::Contains("WarmStartSettings: vars_to_warm_start 'net/(.*' is not a regular expression"));
}

}  // namespace warm_start_test
