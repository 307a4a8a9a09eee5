// Mixed precision: autocast around model_fn in every mode, float32 variables and
// checkpoints, and dynamic loss scaling that skips non-finite steps and is restored.

#include <torch/torch.h>

#include <atomic>
#include <limits>
#include <map>
#include <mutex>
#include <set>

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_state.h"
#include "common/error.h"
#include "distribute/strategy.h"
#include "estimator/autocast_scope.h"
#include "estimator/estimator.h"
#include "estimator/loss_scaler.h"
#include "estimator/metrics/mean_squared_error.h"
#include "tests/estimator/test_models.h"
#include "tests/log_capture.h"
#include "tests/test_util.h"

#include <catch2/catch.hpp>

// The file's own names, apart from those of the tests compiled with it in one unit.
namespace mixed_precision_test {
using namespace est;
using est::testing::FreshTempDir;
using est::testing::SineInput;

namespace {

// The dtypes the hidden layer's output had in model_fn, by mode.
struct SeenDtypes {
  std::mutex mutex;
  std::map<Mode, std::set<c10::ScalarType>> by_mode;
};

// Steps whose gradient becomes infinite in the n-th model_fn call of that step (one call
// per local replica), as a float16 overflow would make it.
struct Poison {
  std::set<std::pair<int64_t, int>> calls;  // (global step, call in the step)
  std::map<int64_t, int> calls_seen;
};

SeenDtypes* seen_dtypes = nullptr;
Poison* poison = nullptr;

// y = sin(x0) + x1 / 2 with a small MLP and Adam.
EstimatorSpec Mlp(const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
  auto net = ctx.module("net", [] {
    return torch::nn::Sequential(torch::nn::Linear(2, 16), torch::nn::Tanh(), torch::nn::Linear(16, 1));
  });
  auto hidden = net[0]->as<torch::nn::Linear>()->forward(features.at("x"));
  if (seen_dtypes != nullptr) {
    std::lock_guard<std::mutex> lock(seen_dtypes->mutex);
    seen_dtypes->by_mode[mode].insert(hidden.scalar_type());
  }
  if (mode == Mode::kTrain && poison != nullptr) {
    const int call = poison->calls_seen[ctx.global_step()]++;
    if (poison->calls.count({ctx.global_step(), call}) != 0)
      hidden.register_hook([](const at::Tensor& grad) { return grad * std::numeric_limits<float>::infinity(); });
  }
  auto predictions = net[2]->as<torch::nn::Linear>()->forward(torch::tanh(hidden)).squeeze(1).to(at::kFloat);
  if (mode == Mode::kPredict) return EstimatorSpec::Predict({{"y", predictions}});
  auto loss = torch::mse_loss(predictions, labels);
  if (mode == Mode::kEval) return EstimatorSpec::Eval(loss, {{"mse", metrics::MeanSquaredError(labels, predictions)}});
  auto& adam = ctx.optimizer("adam", [&] { return torch::optim::Adam(net->parameters(), 0.02); });
  return EstimatorSpec::Train(loss, adam);
}

RunConfig Config(MixedPrecision precision, std::optional<LossScaleOptions> loss_scale = std::nullopt) {
  RunConfig config;
  config.tf_random_seed = 5;
  config.save_checkpoints_steps = 1000;
  config.save_summary_steps = 0;
  config.mixed_precision = precision;
  config.loss_scale = loss_scale;
  return config;
}

// The loss scale state in `dir`'s latest checkpoint.
std::pair<double, int64_t> SavedLossScale(const std::string& dir) {
  checkpoint::CheckpointReader reader(*checkpoint::LatestCheckpoint(dir));
  return {reader.tensor(kLossScaleName).item<double>(), reader.tensor(kLossScaleGoodStepsName).item<int64_t>()};
}

// The model's variables in `estimator`'s latest checkpoint: no global step, no loss scale.
std::map<std::string, at::Tensor> ModelVariables(const Estimator& estimator) {
  std::map<std::string, at::Tensor> variables;
  for (const auto& name : estimator.get_variable_names())
    if (name != "global_step" && name.rfind("loss_scale/", 0) != 0) variables[name] = estimator.get_variable_value(name);
  return variables;
}

// True when every variable of the two estimators' latest checkpoints is bit-for-bit equal.
bool SameVariables(const Estimator& a, const Estimator& b) {
  for (const auto& name : a.get_variable_names())
    if (name != "global_step" && !torch::equal(a.get_variable_value(name), b.get_variable_value(name))) return false;
  return true;
}

}  // namespace

TEST_CASE("AutocastScope runs eligible CPU ops in bfloat16 and restores the previous state", "[estimator][mixed_precision]") {
  torch::nn::Linear linear(4, 3);
  const auto x = torch::randn({2, 4});
  CHECK(linear->forward(x).scalar_type() == at::kFloat);
  {
    AutocastScope outer(MixedPrecision::kBFloat16, c10::Device("cpu"));
    CHECK(linear->forward(x).scalar_type() == at::kBFloat16);
    {
      AutocastScope none(MixedPrecision::kNone, c10::Device("cpu"));
      CHECK(linear->forward(x).scalar_type() == at::kBFloat16);
    }
    CHECK(linear->forward(x).scalar_type() == at::kBFloat16);
    // The weights stay float32 under autocast; only the computation is bfloat16.
    CHECK(linear->weight.scalar_type() == at::kFloat);
  }
  CHECK(linear->forward(x).scalar_type() == at::kFloat);

  CHECK_THROWS_WITH(AutocastScope(MixedPrecision::kFloat16, c10::Device("cpu")),
                    Catch::Contains("mixed precision float16 needs CUDA devices, but the replica is on cpu; on the "
                                    "CPU use bfloat16"));
  CHECK_THROWS_WITH(AutocastScope(MixedPrecision::kBFloat16, c10::Device("meta")),
                    Catch::Contains("mixed precision bfloat16 needs CPU or CUDA devices; the replica is on meta"));
  CHECK(linear->forward(x).scalar_type() == at::kFloat);
}

TEST_CASE("ParseMixedPrecision takes TensorFlow's dtype names and their short forms", "[estimator][mixed_precision]") {
  CHECK(ParseMixedPrecision("none") == MixedPrecision::kNone);
  CHECK(ParseMixedPrecision("bfloat16") == MixedPrecision::kBFloat16);
  CHECK(ParseMixedPrecision("bf16") == MixedPrecision::kBFloat16);
  CHECK(ParseMixedPrecision("float16") == MixedPrecision::kFloat16);
  CHECK(ParseMixedPrecision("fp16") == MixedPrecision::kFloat16);
  CHECK_THROWS_WITH(ParseMixedPrecision("half"),
                    Catch::Contains("unknown mixed precision 'half'; expected none, bfloat16 (bf16) or float16 (fp16)"));
  CHECK(std::string(MixedPrecisionName(MixedPrecision::kBFloat16)) == "bfloat16");
}

TEST_CASE("bfloat16 mixed precision trains float32 variables as well as float32 training", "[estimator][mixed_precision]") {
  SeenDtypes seen;
  seen_dtypes = &seen;
  Estimator fp32(Mlp, FreshTempDir("mixed_fp32").string(), Config(MixedPrecision::kNone));
  fp32.train(SineInput, TrainOptions().max_steps(300));
  Estimator bf16(Mlp, FreshTempDir("mixed_bf16").string(), Config(MixedPrecision::kBFloat16));
  seen.by_mode.clear();
  bf16.train(SineInput, TrainOptions().max_steps(300));
  const EvalResult bf16_eval = bf16.evaluate(SineInput);
  auto predictions = bf16.predict(SineInput);
  while (predictions.next()) {
  }
  seen_dtypes = nullptr;

  // model_fn computed in bfloat16 in every mode.
  CHECK(seen.by_mode[Mode::kTrain] == std::set<c10::ScalarType>{at::kBFloat16});
  CHECK(seen.by_mode[Mode::kEval] == std::set<c10::ScalarType>{at::kBFloat16});
  CHECK(seen.by_mode[Mode::kPredict] == std::set<c10::ScalarType>{at::kBFloat16});
  // Variables and checkpoints stay float32 (master weights); no loss scale without float16.
  for (const auto& name : bf16.get_variable_names())
    if (name != "global_step") CHECK(bf16.get_variable_value(name).scalar_type() == at::kFloat);
  checkpoint::CheckpointReader reader(*checkpoint::LatestCheckpoint(bf16.model_dir()));
  CHECK_FALSE(reader.has_tensor(kLossScaleName));
  // It learns the function as well as float32 training does.
  const EvalResult fp32_eval = fp32.evaluate(SineInput);
  INFO("mse float32 " << fp32_eval.at("mse") << ", bfloat16 " << bf16_eval.at("mse"));
  CHECK(fp32_eval.at("mse") < 0.001);
  CHECK(bf16_eval.at("mse") < 1.5 * fp32_eval.at("mse"));
  CHECK(est::testing::MaxRelativeDifference(fp32, bf16) > 0);  // bfloat16 did round
}

TEST_CASE("loss scaling by powers of two changes no bit of float32 training, and its state is saved",
          "[estimator][mixed_precision]") {
  Estimator plain(Mlp, FreshTempDir("loss_scale_plain").string(), Config(MixedPrecision::kNone));
  plain.train(SineInput, TrainOptions().max_steps(23));
  Estimator scaled(Mlp, FreshTempDir("loss_scale_scaled").string(),
                   Config(MixedPrecision::kNone, LossScaleOptions().initial_scale(1024).growth_interval(5)));
  scaled.train(SineInput, TrainOptions().max_steps(23));
  CHECK(SameVariables(plain, scaled));
  // 23 finite steps: grown 4 times, 3 good steps since.
  CHECK(SavedLossScale(scaled.model_dir()) == std::pair<double, int64_t>(16384, 3));
}

TEST_CASE("a step with non-finite gradients is skipped and backs off the scale, a restart continues the scale",
          "[estimator][mixed_precision]") {
  const auto options = LossScaleOptions().initial_scale(1024).growth_interval(4);
  Poison poisoned;
  // Call 0 at step 3 is the resumed train()'s, which creates the variables before the input
  // moves on (no backward): step 3's own is call 1.
  poisoned.calls = {{3, 1}, {4, 0}};
  poison = &poisoned;
  testing::LogCapture log;
  Estimator restarted(Mlp, FreshTempDir("loss_scale_restarted").string(), Config(MixedPrecision::kNone, options));
  restarted.train(SineInput, TrainOptions().max_steps(3));
  CHECK(SavedLossScale(restarted.model_dir()) == std::pair<double, int64_t>(1024, 3));
  Estimator at_3(Mlp, restarted.model_dir(), Config(MixedPrecision::kNone, options));
  const std::map<std::string, at::Tensor> before = ModelVariables(at_3);
  REQUIRE(before.size() == 4);
  Estimator(Mlp, restarted.model_dir(), Config(MixedPrecision::kNone, options)).train(SineInput, TrainOptions().max_steps(5));
  // Steps 3 and 4 were not applied: the variables are those of step 3, the scale fell twice.
  for (const auto& [name, value] : before) CHECK(torch::equal(restarted.get_variable_value(name), value));
  CHECK(restarted.get_variable_value("global_step").item<int64_t>() == 5);
  CHECK(SavedLossScale(restarted.model_dir()) == std::pair<double, int64_t>(256, 0));
  CHECK_THAT(log.text(), Catch::Contains("warning: Gradients of global step 3 are not finite at loss scale 1024: the "
                                         "update was skipped and the loss scale is now 512"));
  CHECK_THAT(log.text(), Catch::Contains("Gradients of global step 4 are not finite at loss scale 512"));
  Estimator(Mlp, restarted.model_dir(), Config(MixedPrecision::kNone, options)).train(SineInput, TrainOptions().max_steps(10));
  // Steps 5-8 grow the scale once; step 9 is one good step.
  CHECK(SavedLossScale(restarted.model_dir()) == std::pair<double, int64_t>(512, 1));

  poisoned.calls_seen.clear();
  poisoned.calls = {{3, 0}, {4, 0}};  // one run: one call per step
  Estimator straight(Mlp, FreshTempDir("loss_scale_straight").string(), Config(MixedPrecision::kNone, options));
  straight.train(SineInput, TrainOptions().max_steps(10));
  poison = nullptr;
  CHECK(SameVariables(restarted, straight));
  CHECK(SavedLossScale(straight.model_dir()) == std::pair<double, int64_t>(512, 1));
}

TEST_CASE("with MirroredStrategy, one replica's non-finite gradients skip the step on every replica",
          "[estimator][mixed_precision][distribute]") {
  const auto options = LossScaleOptions().initial_scale(64).growth_interval(100);
  auto config = [&] {
    RunConfig c = Config(MixedPrecision::kBFloat16, options);
    c.train_distribute = distribute::MirroredStrategy::Create({"cpu", "cpu"});
    return c;
  };
  Poison poisoned;
  poisoned.calls = {{2, 1}};  // replica 1 of step 2
  poison = &poisoned;
  const std::string dir = FreshTempDir("loss_scale_mirrored").string();
  Estimator(Mlp, dir, config()).train(SineInput, TrainOptions().max_steps(2));
  const std::map<std::string, at::Tensor> before = ModelVariables(Estimator(Mlp, dir, config()));
  REQUIRE(before.size() == 4);
  Estimator at_3(Mlp, dir, config());
  at_3.train(SineInput, TrainOptions().max_steps(3));
  for (const auto& [name, value] : before) CHECK(torch::equal(at_3.get_variable_value(name), value));
  CHECK(SavedLossScale(dir) == std::pair<double, int64_t>(32, 0));
  // Replica 1 skipped too: the next steps train both replicas alike, as one update per step.
  at_3.train(SineInput, TrainOptions().max_steps(6));
  poison = nullptr;
  CHECK(SavedLossScale(dir) == std::pair<double, int64_t>(32, 3));
  CHECK(at_3.evaluate(SineInput).at("mse") < 1.0);
}

}  // namespace mixed_precision_test
