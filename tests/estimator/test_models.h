#pragma once
// Small models and inputs shared by the estimator tests.

#include <torch/torch.h>

#include <algorithm>

#include "data/dataset.h"
#include "distribute/input_context.h"
#include "estimator/estimator.h"
#include "estimator/estimator_spec.h"
#include "estimator/metrics/mean_squared_error.h"
#include "estimator/model_context.h"

namespace est::testing {

/// The largest relative difference (max |a − b| / max |a|) over the variables of two
/// Estimators' latest checkpoints, global_step left out.
inline double MaxRelativeDifference(const Estimator& a, const Estimator& b) {
  double worst = 0;
  for (const auto& name : a.get_variable_names()) {
    if (name == "global_step") continue;
    auto x = a.get_variable_value(name).to(torch::kDouble);
    auto y = b.get_variable_value(name).to(torch::kDouble);
    worst = std::max(worst, ((x - y).abs().max() / (x.abs().max() + 1e-12)).item<double>());
  }
  return worst;
}

/// y = 3·x0 − 2·x1 + 0.5, noise-free: 64 examples with fixed x, one element each.
inline data::Dataset RegressionExamples() {
  auto x = torch::linspace(-1, 1, 128).reshape({64, 2});
  auto y = 3 * x.select(1, 0) - 2 * x.select(1, 1) + 0.5;
  return data::Dataset::FromTensors({{"x", x}}, y);
}

/// RegressionExamples in batches, shuffled (unless `shuffle_seed` is unset) and repeated as asked.
inline data::Dataset RegressionData(int64_t batch_size, bool repeat, std::optional<uint64_t> shuffle_seed = 7) {
  auto dataset = RegressionExamples();
  if (shuffle_seed) dataset = dataset.shuffle(64, shuffle_seed);
  if (repeat) dataset = dataset.repeat();
  return dataset.batch(batch_size);
}

/// y = sin(x0) + x1 / 2 on 128 fixed examples, sharded per input pipeline; training shuffles
/// (seed 3) and repeats. Global batch 32, split over the replicas in sync.
inline data::Dataset SineInput(Mode mode, const distribute::InputContext& input) {
  auto x = torch::linspace(-2, 2, 256).reshape({128, 2});
  auto y = torch::sin(x.select(1, 0)) + 0.5 * x.select(1, 1);
  auto dataset = data::Dataset::FromTensors({{"x", x}}, y).shard(input.num_input_pipelines(), input.input_pipeline_id());
  if (mode == Mode::kTrain) dataset = dataset.shuffle(128, 3).repeat();
  return dataset.batch(input.per_replica_batch_size(32));
}

/// A linear regression model_fn on feature "x" with Adam (lr params["learning_rate"], default 0.05).
inline EstimatorSpec RegressionModelFn(const Features& features, const at::Tensor& labels, Mode mode,
                                       ModelContext& ctx) {
  auto linear = ctx.module("linear", [] { return torch::nn::Linear(2, 1); });
  auto predictions = linear->forward(features.at("x")).squeeze(1);
  if (mode == Mode::kPredict) return EstimatorSpec::Predict({{"y", predictions}, {"x", features.at("x")}});
  auto loss = torch::mse_loss(predictions, labels);
  if (mode == Mode::kEval) return EstimatorSpec::Eval(loss, {{"mse", metrics::MeanSquaredError(labels, predictions)}});
  const double lr = ctx.params().value("learning_rate", 0.05);
  auto& adam = ctx.optimizer("adam", [&] { return torch::optim::Adam(linear->parameters(), lr); });
  return EstimatorSpec::Train(loss, adam).summary("mean_prediction", predictions.mean());
}

/// Sets `net`'s parameters, in order, to amplitude·sin(step·i + offset) of their i-th value,
/// the offset counting the values of the parameters before: initial values from a formula.
inline torch::nn::Sequential FillFromFormula(torch::nn::Sequential net, double step, double amplitude) {
  torch::NoGradGuard no_grad;
  int64_t offset = 0;
  for (auto& parameter : net->parameters()) {
    parameter.copy_(torch::sin(torch::arange(parameter.numel(), torch::kFloat32) * step + offset).reshape(parameter.sizes()) *
                    amplitude);
    offset += parameter.numel();
  }
  return net;
}

/// 3 -> 16 -> ReLU -> 1 whose initial values come from a formula rather than the generator:
/// workers that are threads share LibTorch's global generator (processes each have their own).
inline torch::nn::Sequential FormulaNet() {
  return FillFromFormula(
      torch::nn::Sequential(torch::nn::Linear(3, 16), torch::nn::ReLU(), torch::nn::Linear(16, 1)), 1.0, 0.5);
}

inline EstimatorSpec SgdRegression(const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
  auto net = ctx.module("net", FormulaNet);
  auto predictions = net->forward(features.at("x")).squeeze(1);
  auto loss = torch::mse_loss(predictions, labels);
  if (mode == Mode::kEval) return EstimatorSpec::Eval(loss, {{"mse", metrics::MeanSquaredError(labels, predictions)}});
  auto& sgd = ctx.optimizer("sgd", [&] { return torch::optim::SGD(net->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9)); });
  return EstimatorSpec::Train(loss, sgd);
}

/// A small CNN on 3-channel 6×6 images (conv 3 → 4, 3×3; ReLU; 2×2 max-pool; dense 16 → 1) whose
/// initial values come from a formula, as FormulaNet's: its conv weight is a 4-D parameter with
/// more than one input channel, which channels-last lays out anew.
inline torch::nn::Sequential FormulaConvNet() {
  return FillFromFormula(torch::nn::Sequential(torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 4, 3)), torch::nn::ReLU(),
                                               torch::nn::MaxPool2d(2), torch::nn::Flatten(), torch::nn::Linear(16, 1)),
                         0.7, 0.3);
}

/// FormulaConvNet regressing "image" onto the labels with SGD (momentum 0.9).
inline EstimatorSpec SgdConvRegression(const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
  auto net = ctx.module("net", FormulaConvNet);
  auto predictions = net->forward(features.at("image")).squeeze(1);
  auto loss = torch::mse_loss(predictions, labels);
  if (mode == Mode::kEval) return EstimatorSpec::Eval(loss, {{"mse", metrics::MeanSquaredError(labels, predictions)}});
  auto& sgd = ctx.optimizer("sgd", [&] { return torch::optim::SGD(net->parameters(), torch::optim::SGDOptions(0.02).momentum(0.9)); });
  return EstimatorSpec::Train(loss, sgd);
}

/// 64 fixed 3×6×6 images ("image") and their labels, sharded over the workers; each worker
/// batches its share of the global batch `global_batch`.
inline data::Dataset ImagesOfBatch(Mode mode, const distribute::InputContext& input, int64_t global_batch) {
  auto images = torch::cos(torch::arange(64 * 3 * 36, torch::kFloat32) * 0.013).reshape({64, 3, 6, 6});
  auto y = images.mean({1, 2, 3}) * 4 - images.select(1, 2).select(1, 0).select(1, 0);
  auto dataset =
      data::Dataset::FromTensors({{"image", images}}, y).shard(input.num_input_pipelines(), input.input_pipeline_id());
  if (mode == Mode::kTrain) dataset = dataset.repeat();
  return dataset.batch(input.per_replica_batch_size(global_batch));
}

/// 128 fixed examples, sharded over the workers; each worker batches its share of the
/// global batch `global_batch`.
inline data::Dataset InputOfBatch(Mode mode, const distribute::InputContext& input, int64_t global_batch) {
  auto x = torch::cos(torch::arange(384, torch::kFloat32) * 0.37).reshape({128, 3});
  auto y = x.select(1, 0) * 2 - x.select(1, 1) * x.select(1, 2);
  auto dataset = data::Dataset::FromTensors({{"x", x}}, y).shard(input.num_input_pipelines(), input.input_pipeline_id());
  if (mode == Mode::kTrain) dataset = dataset.repeat();
  return dataset.batch(input.per_replica_batch_size(global_batch));
}

}  // namespace est::testing
