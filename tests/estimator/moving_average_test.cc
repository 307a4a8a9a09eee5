// RunConfig::moving_average: the chief keeps tf.train.ExponentialMovingAverage's shadows of
// the weights, checkpoints them, evaluates and predicts with them, and a restored job
// continues them.

#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "estimator/estimator.h"
#include "estimator/moving_average.h"
#include "estimator/predictions.h"
#include "tests/estimator/test_models.h"
#include "tests/log_capture.h"
#include "tests/test_util.h"

// The file's own names, apart from those of the tests compiled with it in one unit.
namespace moving_average_test {
using namespace est;

namespace {

constexpr double kLearningRate = 0.1;

struct Weights : torch::nn::Module {
  at::Tensor w = register_parameter("w", torch::tensor({0.5, -0.25, 2.0}, torch::kDouble));
};

const at::Tensor& Slope() {
  static const at::Tensor slope = torch::tensor({1.0, 2.0, -1.0}, torch::kDouble);
  return slope;
}

// loss = sum(w * slope): plain SGD moves w by -lr * slope every step, exactly. Evaluation
// reports the loss, prediction the weights.
EstimatorSpec ConstantSlope(const Features& features, const at::Tensor&, Mode mode, ModelContext& ctx) {
  auto weights = ctx.module("weights", [] { return std::make_shared<Weights>(); });
  if (mode == Mode::kPredict)
    return EstimatorSpec::Predict({{"w", weights->w.detach().unsqueeze(0).expand({features.at("x").size(0), 3})}});
  auto loss = (weights->w * Slope()).sum() + 0 * features.at("x").sum();
  if (mode == Mode::kEval) return EstimatorSpec::Eval(loss);
  auto& sgd = ctx.optimizer("sgd", [&] { return torch::optim::SGD(weights->parameters(), kLearningRate); });
  return EstimatorSpec::Train(loss, sgd);
}

data::Dataset Input(Mode mode, const distribute::InputContext&) {
  return testing::RegressionData(8, /*repeat=*/mode == Mode::kTrain, std::nullopt);
}

RunConfig Config(bool num_updates) {
  RunConfig config;
  config.save_summary_steps = 0;
  config.log_step_count_steps = 1000;
  config.moving_average = MovingAverageOptions().decay(0.9).num_updates(num_updates);
  return config;
}

// The shadow after `steps` steps, by hand: w_k = w_0 - k lr slope, and
// shadow_k = shadow_{k-1} - (1 - d_k) (shadow_{k-1} - w_k), d_k = min(0.9, (1 + k) / (10 + k))
// with num_updates, else 0.9.
at::Tensor HandAverage(int64_t steps, bool num_updates) {
  const at::Tensor start = torch::tensor({0.5, -0.25, 2.0}, torch::kDouble);
  at::Tensor shadow = start.clone();
  for (int64_t k = 1; k <= steps; ++k) {
    const at::Tensor w = start - static_cast<double>(k) * kLearningRate * Slope();
    const double decay = num_updates ? std::min(0.9, (1.0 + k) / (10.0 + k)) : 0.9;
    shadow = shadow - (1 - decay) * (shadow - w);
  }
  return shadow;
}

}  // namespace

TEST_CASE("The moving averages after K steps are tf.train.ExponentialMovingAverage's, checkpointed",
          "[estimator][moving_average]") {
  for (const bool num_updates : {false, true}) {
    INFO("num_updates " << num_updates);
    Estimator estimator(ConstantSlope, testing::FreshTempDir("ema_hand").string(), Config(num_updates));
    estimator.train(Input, TrainOptions().max_steps(12));
    const at::Tensor average = estimator.get_variable_value("weights/w/ExponentialMovingAverage");
    CHECK(torch::allclose(average, HandAverage(12, num_updates), 1e-12, 1e-14));
    // The weights themselves train on: 12 plain SGD steps.
    CHECK(torch::allclose(estimator.get_variable_value("weights/w"),
                          torch::tensor({0.5, -0.25, 2.0}, torch::kDouble) - 12 * kLearningRate * Slope(), 1e-12, 1e-14));
  }
}

TEST_CASE("Evaluation and prediction use the moving averages; without the option, the weights",
          "[estimator][moving_average]") {
  const std::string dir = testing::FreshTempDir("ema_eval").string();
  Estimator estimator(ConstantSlope, dir, Config(/*num_updates=*/true));
  estimator.train(Input, TrainOptions().max_steps(12));
  const at::Tensor average = HandAverage(12, true);
  CHECK(estimator.evaluate(Input).at("loss") == Approx((average * Slope()).sum().item<double>()).epsilon(1e-12));
  for (const Prediction& prediction : estimator.predict(Input))
    CHECK(torch::allclose(prediction.at("w"), average, 1e-12, 1e-14));

  RunConfig plain = Config(true);
  plain.moving_average.reset();
  const at::Tensor weights = estimator.get_variable_value("weights/w");
  CHECK(Estimator(ConstantSlope, dir, plain).evaluate(Input).at("loss") ==
        Approx((weights * Slope()).sum().item<double>()).epsilon(1e-12));
}

TEST_CASE("Which weights evaluation, prediction and export read is chosen by inference_weights and logged",
          "[estimator][moving_average]") {
  const std::string dir = testing::FreshTempDir("ema_choice").string();
  Estimator trained(ConstantSlope, dir, Config(/*num_updates=*/true));
  trained.train(Input, TrainOptions().max_steps(12));
  const double average_loss = (HandAverage(12, true) * Slope()).sum().item<double>();
  const double weights_loss = (trained.get_variable_value("weights/w") * Slope()).sum().item<double>();
  REQUIRE(std::abs(average_loss - weights_loss) > 1e-3);
  const std::string checkpoint = dir + "/model.ckpt-12";

  RunConfig plain = Config(true);
  plain.moving_average.reset();
  {
    // No choice made, averages in the checkpoint: the weights as trained, with a warning.
    testing::LogCapture log;
    CHECK(Estimator(ConstantSlope, dir, plain).evaluate(Input).at("loss") == Approx(weights_loss).epsilon(1e-12));
    CHECK(log.text().find("warning: Restoring parameters from " + checkpoint + ": the weights as trained, not the "
                          "moving averages it also holds, as RunConfig::moving_average is not set") !=
          std::string::npos);
  }
  {
    testing::LogCapture log;
    plain.inference_weights = InferenceWeights::kMovingAverages;
    Estimator averaged(ConstantSlope, dir, plain);
    CHECK(averaged.evaluate(Input).at("loss") == Approx(average_loss).epsilon(1e-12));
    for (const Prediction& prediction : averaged.predict(Input))
      CHECK(torch::allclose(prediction.at("w"), HandAverage(12, true), 1e-12, 1e-14));
    CHECK(log.text().find("info: Restoring parameters from " + checkpoint + ": the moving averages of the weights "
                          "(RunConfig::inference_weights)") != std::string::npos);
  }
  {
    testing::LogCapture log;
    RunConfig chosen = Config(true);
    chosen.inference_weights = InferenceWeights::kVariables;  // the moving averages kept, not used
    CHECK(Estimator(ConstantSlope, dir, chosen).evaluate(Input).at("loss") == Approx(weights_loss).epsilon(1e-12));
    CHECK(log.text().find("info: Restoring parameters from " + checkpoint + ": the weights as trained "
                          "(RunConfig::inference_weights)") != std::string::npos);
    CHECK(log.text().find("warning") == std::string::npos);
  }
  // A checkpoint without averages cannot give them when they are asked for by name.
  const std::string bare = testing::FreshTempDir("ema_choice_bare").string();
  Estimator(ConstantSlope, bare, plain).train(Input, TrainOptions().max_steps(2));  // trained without averages
  CHECK_THROWS_MATCHES(Estimator(ConstantSlope, bare, plain).evaluate(Input), CheckpointError,
                       testing::MessageMatches(Catch::Equals(
                           "checkpoint " + bare + "/model.ckpt-2 holds no moving averages of the weights, which "
                           "RunConfig::inference_weights = kMovingAverages reads: it was written without "
                           "RunConfig::moving_average")));
}

TEST_CASE("Evaluating a model_dir without a checkpoint warns that the model is untrained, and writes nothing",
          "[estimator]") {
  const std::filesystem::path dir = testing::FreshTempDir("eval_untrained") / "model";
  testing::LogCapture log;
  const EvalResult result = Estimator(ConstantSlope, dir.string(), Config(false)).evaluate(Input);
  CHECK(result.at("global_step") == 0);
  CHECK(result.at("loss") == Approx((torch::tensor({0.5, -0.25, 2.0}, torch::kDouble) * Slope()).sum().item<double>()));
  CHECK(log.text().find("warning: Could not find trained model in model_dir: " + dir.string() +
                        ": evaluating the model as model_fn initializes it (untrained)") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir));
}

TEST_CASE("A restored job continues the moving averages exactly", "[estimator][moving_average]") {
  Estimator straight(ConstantSlope, testing::FreshTempDir("ema_straight").string(), Config(true));
  straight.train(Input, TrainOptions().max_steps(12));
  const std::string dir = testing::FreshTempDir("ema_restored").string();
  Estimator(ConstantSlope, dir, Config(true)).train(Input, TrainOptions().max_steps(5));
  Estimator restored(ConstantSlope, dir, Config(true));
  restored.train(Input, TrainOptions().max_steps(12));
  CHECK(torch::equal(restored.get_variable_value("weights/w/ExponentialMovingAverage"),
                     straight.get_variable_value("weights/w/ExponentialMovingAverage")));
}

TEST_CASE("A moving-average decay outside [0, 1] is refused", "[estimator][moving_average]") {
  RunConfig config = Config(false);
  config.moving_average->decay(1.5);
  CHECK_THAT(testing::ErrorMessageOf<ConfigError>([&] { config.validate(); }),
             Catch::Contains("RunConfig::moving_average: decay is 1.5; expected a number in [0, 1]"));
}

}  // namespace moving_average_test
