// EstimatorSpec's gradient clipping and transform act on the gradients that are applied: the
// average over every replica in sync.

#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

#include "distribute/strategy.h"
#include "estimator/estimator.h"
#include "estimator/summary/event_reader.h"
#include "tests/estimator/test_models.h"
#include "tests/estimator/worker_threads.h"
#include "tests/test_util.h"

// The file's own names, apart from those of the tests compiled with it in one unit.
namespace gradient_clipping_test {
using namespace est;

namespace {

constexpr double kLearningRate = 0.1;

// FormulaNet regressing x onto y with plain SGD, clipped as `clip` says.
template <typename Clip>
ModelFn ClippedRegression(Clip clip) {
  return [clip](const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
    auto net = ctx.module("net", testing::FormulaNet);
    auto loss = torch::mse_loss(net->forward(features.at("x")).squeeze(1), labels);
    if (mode == Mode::kEval) return EstimatorSpec::Eval(loss);
    auto& sgd = ctx.optimizer("sgd", [&] { return torch::optim::SGD(net->parameters(), kLearningRate); });
    EstimatorSpec spec = EstimatorSpec::Train(loss, sgd);
    clip(spec);
    return spec;
  };
}

data::Dataset Input(Mode mode, const distribute::InputContext& input) { return testing::InputOfBatch(mode, input, 32); }

RunConfig Config(std::shared_ptr<distribute::Strategy> strategy = nullptr) {
  RunConfig config;
  config.save_summary_steps = 1;
  config.log_step_count_steps = 1000;
  config.train_distribute = std::move(strategy);
  return config;
}

// The scalars written under `tag` in `dir`'s event file, by step.
std::map<int64_t, double> Scalars(const std::string& dir, const std::string& tag) {
  std::map<int64_t, double> by_step;
  for (const auto& event : ReadScalarEvents(ListEventFiles(dir).at(0)))
    if (event.tag == tag) by_step[event.step] = event.value;
  return by_step;
}

}  // namespace

TEST_CASE("Clipping by global norm scales the replicas' averaged gradients as tf.clip_by_global_norm",
          "[estimator][clipping]") {
  constexpr double kClipNorm = 0.05;
  const std::string dir = testing::FreshTempDir("clip_norm_hand").string();
  Estimator mirrored(ClippedRegression([](EstimatorSpec& spec) { spec.clip_gradients_by_global_norm(kClipNorm); }),
                     dir, Config(distribute::MirroredStrategy::Create({"cpu", "cpu"})));
  mirrored.train(Input, TrainOptions().max_steps(1));

  // By hand: the gradient of the mean loss over the global batch (the first 32 examples),
  // its global norm, and SGD's step with the clipped gradient.
  torch::nn::Sequential net = testing::FormulaNet();
  const data::Element batch = Input(Mode::kTrain, distribute::InputContext(1, 0, 1)).make_iterator()->next().value();
  torch::mse_loss(net->forward(batch.features.at("x")).squeeze(1), batch.labels).backward();
  double squares = 0;
  for (const auto& parameter : net->parameters()) squares += parameter.grad().to(torch::kDouble).square().sum().item<double>();
  const double norm = std::sqrt(squares);
  REQUIRE(norm > 4 * kClipNorm);  // the clipping does something
  for (const auto& item : net->named_parameters()) {
    INFO(item.key());
    const at::Tensor expected =
        item.value().detach().to(torch::kDouble) - kLearningRate * item.value().grad().to(torch::kDouble) * kClipNorm / norm;
    const at::Tensor trained = mirrored.get_variable_value("net/" + item.key()).to(torch::kDouble);
    CHECK((trained - expected).abs().max().item<double>() <= 1e-7);
  }
  // TensorBoard gets the norm before clipping, and after it: the clip acted.
  CHECK(Scalars(dir, "global_norm/gradient_norm").at(1) == Approx(norm).epsilon(1e-6));
  CHECK(Scalars(dir, "global_norm/clipped_gradient_norm").at(1) == Approx(kClipNorm).epsilon(1e-6));
}

TEST_CASE("With clipping, 1 replica x 2B trains like 2 replicas x B and 2 workers x B", "[estimator][clipping]") {
  auto clip = [](EstimatorSpec& spec) { spec.clip_gradients_by_value(-0.4, 0.3).clip_gradients_by_global_norm(0.2); };
  Estimator single(ClippedRegression(clip), testing::FreshTempDir("clip_single").string(), Config());
  single.train(Input, TrainOptions().max_steps(20));
  const std::map<int64_t, double> single_norms = Scalars(single.model_dir(), "global_norm/gradient_norm");
  REQUIRE(single_norms.size() == 20);

  Estimator mirrored(ClippedRegression(clip), testing::FreshTempDir("clip_mirrored").string(),
                     Config(distribute::MirroredStrategy::Create({"cpu", "cpu"})));
  mirrored.train(Input, TrainOptions().max_steps(20));
  CHECK(testing::MaxRelativeDifference(single, mirrored) <= 1e-5);

  const std::string workers_dir = testing::FreshTempDir("clip_workers").string();
  testing::RunMultiWorkerThreads(2, [&](int, std::shared_ptr<distribute::Strategy> strategy) {
    Estimator(ClippedRegression(clip), workers_dir, Config(strategy)).train(Input, TrainOptions().max_steps(20));
  });
  Estimator workers(ClippedRegression(clip), workers_dir, Config());
  CHECK(workers.get_variable_value("global_step").item<int64_t>() == 20);
  CHECK(testing::MaxRelativeDifference(single, workers) <= 1e-5);

  // The same norms, step by step: each is the norm of the averaged gradients.
  for (const std::string& dir : {mirrored.model_dir(), workers_dir}) {
    const std::map<int64_t, double> norms = Scalars(dir, "global_norm/gradient_norm");
    REQUIRE(norms.size() == 20);
    for (const auto& [step, norm] : single_norms) CHECK(norms.at(step) == Approx(norm).epsilon(1e-5));
  }
}

TEST_CASE("A gradient transform sees every averaged gradient by name and may replace it", "[estimator][clipping]") {
  std::vector<std::string> seen;
  // Freezes the first layer's bias; doubles the last layer's weight gradient with a new tensor.
  auto freeze = [&seen](EstimatorSpec& spec) {
    spec.transform_gradients([&seen](const NamedTensors& variables, std::vector<at::Tensor>& gradients) {
      seen.clear();
      for (size_t i = 0; i < variables.size(); ++i) {
        seen.push_back(variables[i].first);
        if (variables[i].first == "net/0.bias") gradients[i].zero_();
        if (variables[i].first == "net/2.weight") gradients[i] = gradients[i] * 2;
      }
    });
  };
  Estimator estimator(ClippedRegression(freeze), testing::FreshTempDir("transform_freeze").string(), Config());
  estimator.train(Input, TrainOptions().max_steps(5));
  CHECK(seen == std::vector<std::string>{"net/0.weight", "net/0.bias", "net/2.weight", "net/2.bias"});
  torch::nn::Sequential initial = testing::FormulaNet();
  CHECK(torch::equal(estimator.get_variable_value("net/0.bias"), initial->named_parameters()["0.bias"]));
  CHECK_FALSE(torch::equal(estimator.get_variable_value("net/0.weight"), initial->named_parameters()["0.weight"]));

  // One step by hand with the doubled gradient: the last layer's weight moves twice as far.
  Estimator one_step(ClippedRegression(freeze), testing::FreshTempDir("transform_one").string(), Config());
  one_step.train(Input, TrainOptions().max_steps(1));
  Estimator plain(ClippedRegression([](EstimatorSpec&) {}), testing::FreshTempDir("transform_plain").string(), Config());
  plain.train(Input, TrainOptions().max_steps(1));
  const at::Tensor start = initial->named_parameters()["2.weight"];
  CHECK(torch::allclose(one_step.get_variable_value("net/2.weight") - start,
                        2 * (plain.get_variable_value("net/2.weight") - start), 1e-5, 1e-7));
}

TEST_CASE("Bad clipping and transforms are refused, naming what is wrong", "[estimator][clipping]") {
  auto train = [](auto clip) {
    Estimator estimator(ClippedRegression(clip), testing::FreshTempDir("clip_bad").string(), Config());
    return testing::ErrorMessageOf<ModelError>([&] { estimator.train(Input, TrainOptions().max_steps(1)); });
  };
  CHECK_THAT(train([](EstimatorSpec& spec) { spec.clip_gradients_by_global_norm(0.0); }),
             Catch::Contains("clip_gradients_by_global_norm(0): the clip norm must be finite and > 0"));
  CHECK_THAT(train([](EstimatorSpec& spec) { spec.clip_gradients_by_global_norm(-1.0); }),
             Catch::Contains("the clip norm must be finite and > 0"));
  CHECK_THAT(train([](EstimatorSpec& spec) { spec.clip_gradients_by_value(1.0, -1.0); }),
             Catch::Contains("clip_gradients_by_value(1, -1): expected clip_value_min <= clip_value_max"));
  CHECK_THAT(train([](EstimatorSpec& spec) {
               spec.transform_gradients([](const NamedTensors&, std::vector<at::Tensor>& gradients) {
                 gradients[1] = torch::zeros({3});
               });
             }),
             Catch::Contains("the gradient transform gave variable 'net/0.bias' a gradient of Float [3] on cpu; "
                             "expected Float [16] on cpu"));
  CHECK_THAT(train([](EstimatorSpec& spec) {
               spec.transform_gradients([](const NamedTensors&, std::vector<at::Tensor>&) {
                 throw std::runtime_error("out of noise");
               });
             }),
             Catch::Contains("the gradient transform (EstimatorSpec::transform_gradients) failed at global step 0: "
                             "std::runtime_error: out of noise"));
}

}  // namespace gradient_clipping_test
