// The one-unit dense model of TensorFlow's MirroredStrategy README.

#include <torch/torch.h>

#include "apps/est_train/models.h"
#include "estimator/estimator_spec.h"
#include "estimator/metrics/mean_squared_error.h"
#include "estimator/model_context.h"

namespace est_train {
namespace {

constexpr double kLinearLearningRate = 0.2;  // SGD's, without --learning-rate

est::EstimatorSpec LinearModelFn(const est::Features& features, const torch::Tensor& labels, est::Mode mode,
                           est::ModelContext& ctx) {
  auto dense = ctx.module("dense", [] { return torch::nn::Linear(1, 1); });
  auto predictions = dense->forward(features.at("x")).squeeze(1);
  if (mode == est::Mode::kPredict) return est::EstimatorSpec::Predict({{"logits", predictions}});
  auto loss = torch::mse_loss(predictions, labels);
  if (mode == est::Mode::kEval)
    return est::EstimatorSpec::Eval(loss, {{"mean_squared_error", est::metrics::MeanSquaredError(labels, predictions)}});
  const double learning_rate = ctx.params().value("learning_rate", kLinearLearningRate);
  auto& sgd = ctx.optimizer("sgd", [&] { return torch::optim::SGD(dense->parameters(), learning_rate); });
  return est::EstimatorSpec::Train(loss, sgd);
}

}  // namespace

ModelRecipe Linear(int64_t batch_size) {
  auto input_fn = [=](est::Mode mode, const est::distribute::InputContext& input) {
    auto dataset = est::data::Dataset::FromTensors({{"x", torch::ones({100, 1})}}, torch::ones({100}))
                       .shard(input.num_input_pipelines(), input.input_pipeline_id());
    if (mode == est::Mode::kTrain) dataset = dataset.repeat();
    return dataset.batch(input.per_replica_batch_size(batch_size));
  };
  auto serving_input = [] { return est::ServingInputReceiver{{{"x", torch::kFloat32, {-1, 1}}}, nullptr}; };
  return ModelRecipe{LinearModelFn, input_fn, kLinearLearningRate, serving_input, {"mean_squared_error"}};
}

}  // namespace est_train
