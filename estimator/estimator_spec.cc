#include "estimator/estimator_spec.h"

#include <ATen/ATen.h>

#include "common/error.h"

namespace est {

EstimatorSpec EstimatorSpec::Train(at::Tensor loss, torch::optim::Optimizer& optimizer) {
  EstimatorSpec spec;
  spec.mode = Mode::kTrain;
  spec.loss = std::move(loss);
  spec.optimizer = &optimizer;
  return spec;
}

EstimatorSpec EstimatorSpec::Eval(at::Tensor loss, std::map<std::string, metrics::MetricPtr> eval_metric_ops) {
  EstimatorSpec spec;
  spec.mode = Mode::kEval;
  spec.loss = std::move(loss);
  spec.eval_metric_ops = std::move(eval_metric_ops);
  return spec;
}

EstimatorSpec EstimatorSpec::Predict(TensorMap predictions) {
  EstimatorSpec spec;
  spec.mode = Mode::kPredict;
  spec.predictions = std::move(predictions);
  return spec;
}

EstimatorSpec& EstimatorSpec::summary(const std::string& tag, at::Tensor scalar) {
  summaries[tag] = std::move(scalar);
  return *this;
}

void EstimatorSpec::validate(Mode expected_mode) const {
  EST_CHECK(mode == expected_mode, ModelError, "model_fn was called in mode '", ModeName(expected_mode),
            "' but returned an EstimatorSpec for mode '", ModeName(mode), "'");
  if (mode == Mode::kTrain || mode == Mode::kEval) {
    EST_CHECK(loss.defined(), ModelError, "EstimatorSpec for mode '", ModeName(mode),
              "' needs a loss, but the loss tensor is undefined");
    EST_CHECK(loss.numel() == 1 && loss.dim() <= 1, ModelError, "loss must be a scalar, got shape ",
              loss.sizes());
    EST_CHECK(at::isFloatingType(loss.scalar_type()), ModelError,
              "loss must be a floating-point tensor, got ", loss.scalar_type());
  }
  if (mode == Mode::kTrain) {
    EST_CHECK(optimizer != nullptr, ModelError, "EstimatorSpec for mode '", ModeName(Mode::kTrain),
              "' needs an optimizer (EstimatorSpec::Train(loss, optimizer)), but it has none");
    EST_CHECK(loss.requires_grad(), ModelError,
              "the training loss does not require grad: it is not connected to any trainable variable");
    EST_CHECK(loss.grad_fn() != nullptr, ModelError,
              "the training loss is a leaf tensor (it has no grad_fn); expected a loss computed from the model's "
              "variables");
  }
  for (const auto& [name, metric] : eval_metric_ops)
    EST_CHECK(metric != nullptr, ModelError, "eval metric '", name, "' is null");
  if (mode == Mode::kPredict) {
    EST_CHECK(!predictions.empty(), ModelError, "EstimatorSpec for mode '", ModeName(Mode::kPredict),
              "' needs predictions");
    for (const auto& [name, tensor] : predictions)
      EST_CHECK(tensor.defined() && tensor.dim() >= 1, ModelError, "prediction '", name,
                "' must have a batch dimension, got ", tensor.defined() ? tensor.dim() : -1,
                " dims");
  }
  for (const auto& [tag, tensor] : summaries)
    EST_CHECK(tensor.defined() && tensor.numel() == 1, ModelError, "summary '", tag,
              "' must be a scalar, got shape ", tensor.defined() ? tensor.sizes() : at::IntArrayRef{});
}

}  // namespace est
