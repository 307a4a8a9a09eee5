// The traced programs of est-train's three models: each export's model.pt, run without the
// model's code, answers what Estimator::predict answers at batch sizes 1, 7 and 64 (float32 within
// 1e-6), whichever way the CNN's layers are computed.

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "apps/est_train/models.h"
#include "serving/predictor.h"
#include "tests/serving/serving_models.h"

namespace est_train_programs_test {
using namespace est;

namespace {

/// A request of `examples` of the serving input `spec`: floats normal, integers in [0, 256).
Features RandomRequest(const TensorSpec& spec, int64_t examples, uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<int64_t> sizes = spec.shape;
  sizes[0] = examples;
  if (at::isFloatingType(spec.dtype)) return {{spec.name, torch::randn(sizes, torch::dtype(spec.dtype))}};
  return {{spec.name, torch::randint(0, 256, sizes, torch::dtype(spec.dtype))}};
}

/// Trains `recipe`'s model 2 steps on `input_fn`, exports it, and checks its program against
/// Estimator::predict.
void CheckProgram(const est_train::ModelRecipe& recipe, const InputFn& input_fn, const std::string& name) {
  Estimator estimator(recipe.model_fn, testing::FreshTempDir("programs_" + name).string(), testing::QuietConfig());
  estimator.train(input_fn, TrainOptions().max_steps(2));
  const std::string path = estimator.export_saved_model(estimator.model_dir() + "/export", recipe.serving_input);
  const serving::Predictor program(path);
  REQUIRE(program.runs_program());
  const TensorSpec input = recipe.serving_input().inputs.at(0);
  for (int64_t batch : {1, 7, 64}) {
    INFO(name << ", batch size " << batch);
    const Features request = RandomRequest(input, batch, 100 + batch);
    const TensorMap served = program.predict(request);
    const TensorMap expected = testing::PredictAll(estimator, request);
    REQUIRE(served.size() == expected.size());
    for (const auto& [output, value] : expected) {
      INFO("output " << output);
      REQUIRE(served.at(output).sizes() == value.sizes());
      if (at::isFloatingType(value.scalar_type()))
        CHECK(torch::allclose(served.at(output), value, /*rtol=*/0, /*atol=*/1e-6));
      else
        CHECK(torch::equal(served.at(output), value));
    }
  }
}

/// Training input of `examples` random examples of `recipe`'s serving input, with labels `labels`.
InputFn SyntheticInput(const est_train::ModelRecipe& recipe, at::Tensor labels) {
  const Features features = RandomRequest(recipe.serving_input().inputs.at(0), labels.size(0), 7);
  return [features, labels](Mode, const distribute::InputContext&) {
    return data::Dataset::FromTensors(features, labels).batch(8).repeat();
  };
}

}  // namespace

TEST_CASE("est-train's CNN exports a program that answers as it predicts", "[apps][program]") {
  for (auto layers : {est_apps::CnnLayers::kLibTorch, est_apps::CnnLayers::kFused, est_apps::CnnLayers::kKernels}) {
    if (layers != est_apps::CnnLayers::kLibTorch && !est_apps::kKernelsBuilt) continue;
    const auto recipe = est_train::FashionMnistCnn(est_train::FashionMnistInput{}, 8, 0, layers);
    CheckProgram(recipe, SyntheticInput(recipe, torch::randint(0, 10, {32})),
                 "cnn" + std::to_string(static_cast<int>(layers)));
  }
}

TEST_CASE("est-train's linear model exports a program that answers as it predicts", "[apps][program]") {
  const auto recipe = est_train::Linear(8);
  CheckProgram(recipe, recipe.input_fn, "linear");
}

TEST_CASE("est-train's Transformer exports a program that answers as it predicts", "[apps][program]") {
  const auto recipe = est_train::TransformerLanguageModel("", false, 8, 0, 2);
  CheckProgram(recipe, SyntheticInput(recipe, torch::randint(0, 256, {32, 64})), "transformer");
}

}  // namespace est_train_programs_test
