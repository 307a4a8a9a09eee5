// The README's quick start: a model_fn, an input_fn and train_and_evaluate.
// Learns y = 2x - 1 with a one-unit dense layer; prints the evaluation.

#include <torch/torch.h>

#include <cstdio>

#include "estimator/estimator.h"
#include "estimator/metrics/mean_squared_error.h"
#include "estimator/train_and_evaluate.h"

est::EstimatorSpec model_fn(const est::Features& features, const torch::Tensor& labels, est::Mode mode,
                            est::ModelContext& ctx) {
  auto dense = ctx.module("dense", [] { return torch::nn::Linear(1, 1); });  // built once, reused
  auto y = dense->forward(features.at("x")).squeeze(1);
  if (mode == est::Mode::kPredict) return est::EstimatorSpec::Predict({{"y", y}});
  auto loss = torch::mse_loss(y, labels);
  if (mode == est::Mode::kEval)
    return est::EstimatorSpec::Eval(loss, {{"mse", est::metrics::MeanSquaredError(labels, y)}});
  auto& sgd = ctx.optimizer("sgd", [&] { return torch::optim::SGD(dense->parameters(), 0.1); });
  return est::EstimatorSpec::Train(loss, sgd);
}

est::data::Dataset input_fn(est::Mode mode, const est::distribute::InputContext& input) {
  auto x = torch::linspace(-1, 1, 256).unsqueeze(1);
  auto dataset = est::data::Dataset::FromTensors({{"x", x}}, 2 * x.squeeze(1) - 1)
                     .shard(input.num_input_pipelines(), input.input_pipeline_id());
  if (mode == est::Mode::kTrain) dataset = dataset.shuffle(256, /*seed=*/1).repeat();
  return dataset.batch(input.per_replica_batch_size(32));
}

int main(int argc, char** argv) try {
  est::RunConfig config;
  config.save_checkpoints_steps = 100;
  est::Estimator estimator(model_fn, argc > 1 ? argv[1] : "/tmp/est-quickstart", config);
  auto result = est::train_and_evaluate(estimator, est::TrainSpec(input_fn).max_steps(300),
                                        est::EvalSpec(input_fn).steps(std::nullopt).throttle_secs(0));
  if (!result.evaluated()) return 0;  // a training task of a cluster: the evaluator task evaluates
  std::printf("global_step = %.0f, mse = %.6f\n", result["global_step"], result["mse"]);
  return result["global_step"] == 300 && result["mse"] < 1e-3 ? 0 : 1;
} catch (const est::Error& error) {  // a ConfigError, DataError, ModelError, ...: one line that says what to fix
  std::fprintf(stderr, "error: %s\n", error.what());
  return 2;
}
