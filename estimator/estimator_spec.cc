#include "estimator/estimator_spec.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "common/error.h"

namespace est {

EstimatorSpec EstimatorSpec::Train(at::Tensor loss, torch::optim::Optimizer& optimizer) {
  return Train(std::move(loss), {std::ref(optimizer)});
}

EstimatorSpec EstimatorSpec::Train(at::Tensor loss,
                                   std::vector<std::reference_wrapper<torch::optim::Optimizer>> optimizers) {
  EstimatorSpec spec;
  spec.mode = Mode::kTrain;
  spec.loss = std::move(loss);
  for (torch::optim::Optimizer& optimizer : optimizers) spec.optimizers.push_back(&optimizer);
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

EstimatorSpec& EstimatorSpec::learning_rate(schedules::LearningRateSchedule schedule) {
  learning_rate_schedules.emplace_back(nullptr, std::move(schedule));
  return *this;
}

EstimatorSpec& EstimatorSpec::learning_rate(torch::optim::Optimizer& optimizer,
                                            schedules::LearningRateSchedule schedule) {
  learning_rate_schedules.emplace_back(&optimizer, std::move(schedule));
  return *this;
}

EstimatorSpec& EstimatorSpec::clip_gradients_by_global_norm(double clip_norm_value) {
  clip_norm = clip_norm_value;
  return *this;
}

EstimatorSpec& EstimatorSpec::clip_gradients_by_value(double clip_value_min, double clip_value_max) {
  clip_value = {clip_value_min, clip_value_max};
  return *this;
}

EstimatorSpec& EstimatorSpec::transform_gradients(GradientTransform transform) {
  gradient_transform = std::move(transform);
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
    EST_CHECK(!optimizers.empty(), ModelError, "EstimatorSpec for mode '", ModeName(Mode::kTrain),
              "' needs an optimizer (EstimatorSpec::Train(loss, optimizer)), but it has none");
    for (size_t i = 0; i < optimizers.size(); ++i) {
      EST_CHECK(optimizers[i] != nullptr, ModelError, "optimizer ", i, " of the training EstimatorSpec is null");
      const auto earlier = std::find(optimizers.begin(), optimizers.begin() + static_cast<std::ptrdiff_t>(i),
                                     optimizers[i]);
      EST_CHECK(earlier == optimizers.begin() + static_cast<std::ptrdiff_t>(i), ModelError, "optimizer ", i,
                " of the training EstimatorSpec is given twice (also as optimizer ", earlier - optimizers.begin(),
                "); give each optimizer once");
    }
    for (const auto& [optimizer, schedule] : learning_rate_schedules) {
      EST_CHECK(optimizer == nullptr || std::count(optimizers.begin(), optimizers.end(), optimizer) == 1, ModelError,
                "learning-rate schedule ", schedule.description(), " is for an optimizer that is not among the "
                "training EstimatorSpec's; give it to EstimatorSpec::Train too");
      EST_CHECK(std::count_if(learning_rate_schedules.begin(), learning_rate_schedules.end(),
                              [&, optimizer = optimizer](const auto& other) {
                                return other.first == nullptr || optimizer == nullptr || other.first == optimizer;
                              }) == 1,
                ModelError, "two learning-rate schedules would set the same optimizer's rate (", schedule.description(),
                " and another); give each optimizer at most one");
    }
    EST_CHECK(loss.requires_grad(), ModelError,
              "the training loss does not require grad: it is not connected to any trainable variable");
    EST_CHECK(loss.grad_fn() != nullptr, ModelError,
              "the training loss is a leaf tensor (it has no grad_fn); expected a loss computed from the model's "
              "variables");
  }
  if (clip_norm)
    EST_CHECK(std::isfinite(*clip_norm) && *clip_norm > 0, ModelError, "clip_gradients_by_global_norm(", *clip_norm,
              "): the clip norm must be finite and > 0");
  if (clip_value)
    EST_CHECK(!std::isnan(clip_value->first) && !std::isnan(clip_value->second) &&
                  clip_value->first <= clip_value->second,
              ModelError, "clip_gradients_by_value(", clip_value->first, ", ", clip_value->second,
              "): expected clip_value_min <= clip_value_max");
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
