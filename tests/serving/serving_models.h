#pragma once
// A regression model with predictions, trained briefly, for the export and Predictor tests.

#include <torch/torch.h>

#include <string>

#include "estimator/estimator.h"
#include "tests/estimator/test_models.h"
#include "tests/test_util.h"

namespace est::testing {

/// FormulaNet on feature "x" (3 floats): predicts "y" (float32 [-1]) and "positive"
/// (bool [-1]); SGD with momentum in training.
inline EstimatorSpec ServedRegression(const Features& features, const at::Tensor& labels, Mode mode,
                                      ModelContext& ctx) {
  auto net = ctx.module("net", FormulaNet);
  auto y = net->forward(features.at("x")).squeeze(1);
  if (mode == Mode::kPredict) return EstimatorSpec::Predict({{"y", y}, {"positive", y.gt(0)}});
  auto loss = torch::mse_loss(y, labels);
  if (mode == Mode::kEval) return EstimatorSpec::Eval(loss);
  auto& sgd = ctx.optimizer("sgd", [&] { return torch::optim::SGD(net->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9)); });
  return EstimatorSpec::Train(loss, sgd);
}

/// The serving input of ServedRegression: "x", float32 [-1, 3].
inline ServingInputReceiver RegressionServingInput() { return {{{"x", at::kFloat, {-1, 3}}}, nullptr}; }

/// The identity the tests export ServedRegression under.
inline ModelIdentity RegressionIdentity() { return {"served_regression", "1"}; }

/// Requests' inputs: `count` rows of InputOfBatch's features "x", from row `first`.
inline at::Tensor Rows(int64_t first, int64_t count) {
  return torch::cos(torch::arange(384, torch::kFloat32) * 0.37).reshape({128, 3}).narrow(0, first, count).clone();
}

/// A RunConfig that logs seldom.
inline RunConfig QuietConfig() {
  RunConfig config;
  config.log_step_count_steps = 1000;
  return config;
}

/// The training input of ServedRegression.
inline data::Dataset RegressionInput(Mode mode, const distribute::InputContext& input) {
  return InputOfBatch(mode, input, 32);
}

/// Trains `estimator` (of ServedRegression) to global step `steps` and exports it under
/// model_dir/export; returns the version's directory.
inline std::string TrainAndExport(Estimator& estimator, int64_t steps,
                                  const ServingInputFn& serving_input_fn = RegressionServingInput,
                                  const ExportOptions& options = ExportOptions()) {
  estimator.train(RegressionInput, TrainOptions().max_steps(steps));
  return estimator.export_saved_model(estimator.model_dir() + "/export", serving_input_fn, options);
}

}  // namespace est::testing
