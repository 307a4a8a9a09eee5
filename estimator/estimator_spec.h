#pragma once
/// EstimatorSpec: what model_fn returns (tf.estimator.EstimatorSpec).

#include <ATen/core/Tensor.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "estimator/metrics/metric.h"
#include "estimator/mode.h"
#include "estimator/schedules/learning_rate_schedule.h"

namespace torch::optim {
class Optimizer;
}

namespace est {

/// Named tensors: predictions, summaries, logged values.
using TensorMap = std::map<std::string, at::Tensor>;

/// A change to a step's gradients before the optimizer applies them (freezing, noise,
/// custom scaling): called with the trainable variables (checkpoint key and tensor) and their
/// gradients, averaged over the replicas, in the same order. It may change a gradient in place
/// or put another tensor of the same shape, dtype and device in its place. It runs on every
/// replica, each with its copy of the same gradients: it must give every replica the same
/// result (noise from a generator seeded alike).
using GradientTransform = std::function<void(const std::vector<std::pair<std::string, at::Tensor>>& variables,
                                             std::vector<at::Tensor>& gradients)>;

/// The result of one model_fn call. Build it with Train, Eval or Predict; validate()
/// applies TensorFlow's rules (train needs a loss and an optimizer, eval a loss, predict
/// predictions; a loss is a scalar).
struct EstimatorSpec {
  /// A training spec: the framework runs backward on `loss`, averages gradients over
  /// replicas, and steps `optimizer` (which must come from ModelContext::optimizer).
  static EstimatorSpec Train(at::Tensor loss, torch::optim::Optimizer& optimizer);
  /// A training spec with several optimizers, each stepping the variables of its parameter
  /// groups (a tf.group of train ops): `Train(loss, {adagrad, adam})`. Every trainable
  /// variable must belong to exactly one of them.
  static EstimatorSpec Train(at::Tensor loss, std::vector<std::reference_wrapper<torch::optim::Optimizer>> optimizers);
  /// An evaluation spec: `loss` is averaged over batches; each metric is merged across batches.
  static EstimatorSpec Eval(at::Tensor loss, std::map<std::string, metrics::MetricPtr> eval_metric_ops = {});
  /// A prediction spec: every tensor's dim 0 is the batch; predict() splits it per example.
  static EstimatorSpec Predict(TensorMap predictions);

  /// Adds a scalar written to TensorBoard every save_summary_steps (tf.summary.scalar).
  EstimatorSpec& summary(const std::string& tag, at::Tensor scalar);
  /// Training: before each step the framework sets the learning rate of every optimizer
  /// (every parameter group's) to `schedule` at the global step, and writes it to TensorBoard
  /// as `learning_rate`. The optimizers' options must implement set_lr (LibTorch's own do).
  EstimatorSpec& learning_rate(schedules::LearningRateSchedule schedule);
  /// The same for one of several optimizers, written as `learning_rate/<its ModelContext name>`.
  EstimatorSpec& learning_rate(torch::optim::Optimizer& optimizer, schedules::LearningRateSchedule schedule);
  /// Training: scales the averaged gradients by clip_norm / global_norm where their global
  /// norm (over every trainable variable) exceeds `clip_norm` (tf.clip_by_global_norm), and
  /// writes the norm before clipping to TensorBoard as `global_norm/gradient_norm`.
  EstimatorSpec& clip_gradients_by_global_norm(double clip_norm);
  /// Training: clamps every averaged gradient's values to [clip_value_min, clip_value_max]
  /// (tf.clip_by_value).
  EstimatorSpec& clip_gradients_by_value(double clip_value_min, double clip_value_max);
  /// Training: runs `transform` on the averaged gradients, before clipping.
  EstimatorSpec& transform_gradients(GradientTransform transform);

  /// Throws ModelError naming what is missing or malformed for `expected_mode`.
  void validate(Mode expected_mode) const;

  Mode mode = Mode::kPredict;
  at::Tensor loss;
  std::vector<torch::optim::Optimizer*> optimizers;
  std::map<std::string, metrics::MetricPtr> eval_metric_ops;
  TensorMap predictions;
  TensorMap summaries;
  /// Each schedule with the optimizer it sets, or null for every optimizer.
  std::vector<std::pair<torch::optim::Optimizer*, schedules::LearningRateSchedule>> learning_rate_schedules;
  std::optional<double> clip_norm;
  std::optional<std::pair<double, double>> clip_value;
  GradientTransform gradient_transform;
};

}  // namespace est
