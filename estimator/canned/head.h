#pragma once
/// Head: what a canned estimator does with its logits (tf.estimator.Head) — the training loss,
/// the predictions and the evaluation metrics, with TensorFlow's names and values — and the
/// EstimatorSpec of each mode. A model_fn of the user's may use a head as well:
///
///   auto logits = net->forward(features);
///   return head.spec(mode, features, labels, logits, {optimizer});

#include <ATen/core/Tensor.h>
#include <torch/arg.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "data/element.h"
#include "estimator/estimator_spec.h"
#include "estimator/metrics/metric.h"
#include "estimator/mode.h"

namespace torch::optim {
class Optimizer;
}

namespace est::canned {

/// How the weighted per-example losses of a batch become the training loss
/// (tf.losses.Reduction).
enum class LossReduction {
  kSumOverBatchSize,  ///< their sum divided by the number of losses (TensorFlow's default)
  kSum,               ///< their sum
};

/// What every head takes.
struct HeadOptions {
  /// The feature holding each example's weight ([batch] or [batch, 1]); empty: every weight 1.
  TORCH_ARG(std::string, weight_column);
  /// How the batch's losses are reduced.
  TORCH_ARG(LossReduction, loss_reduction) = LossReduction::kSumOverBatchSize;
  /// Appended as "/<name>" to every metric key (TensorFlow's head name).
  TORCH_ARG(std::string, name);
};

/// Metrics by their TensorFlow key ("accuracy", "auc", "label/mean", ...).
using MetricMap = std::map<std::string, metrics::MetricPtr>;

/// The loss, predictions and metrics of one kind of problem.
class Head {
 public:
  virtual ~Head() = default;

  /// The size of the logits' last dimension this head takes.
  virtual int64_t logits_dimension() const = 0;

  /// The training loss: each example's loss times its weight, reduced by the options'
  /// loss_reduction. ModelError when the logits' shape is not [batch, logits_dimension()],
  /// DataError naming the labels when they do not fit the head (shape, range), ConfigError
  /// when the weight column is not among `features`.
  at::Tensor loss(const at::Tensor& labels, const at::Tensor& logits, const Features& features) const;

  /// The predictions of `logits` by TensorFlow's keys ("logits", "probabilities",
  /// "class_ids", ...), each with the batch as dim 0.
  virtual TensorMap predictions(const at::Tensor& logits) const = 0;

  /// Every evaluation metric of TensorFlow's head for one batch, by key (with the name
  /// suffix), without "loss" (the Estimator averages the EstimatorSpec's loss itself).
  MetricMap metrics(const at::Tensor& labels, const at::Tensor& logits, const Features& features) const;

  /// The EstimatorSpec of `mode`: Predict(predictions), Eval(loss, metrics), or
  /// Train(loss, optimizers).
  EstimatorSpec spec(Mode mode, const Features& features, const at::Tensor& labels, const at::Tensor& logits,
                     std::vector<std::reference_wrapper<torch::optim::Optimizer>> optimizers = {}) const;

  /// The options the head was made with.
  const HeadOptions& options() const { return options_; }

 protected:
  explicit Head(HeadOptions options) : options_(std::move(options)) {}

  /// Labels checked against the head and converted to what its loss takes; DataError naming
  /// what does not fit. `logits` is already checked.
  virtual at::Tensor processed_labels(const at::Tensor& labels, const at::Tensor& logits) const = 0;
  /// Each example's loss before weighting: [batch, 1] or [batch, logits_dimension()].
  virtual at::Tensor unweighted_loss(const at::Tensor& labels, const at::Tensor& logits) const = 0;
  /// The head's own metrics from processed labels, checked logits, the unweighted loss and the
  /// weights ([batch, 1]), keyed without the name suffix.
  virtual MetricMap head_metrics(const at::Tensor& labels, const at::Tensor& logits, const at::Tensor& loss,
                                 const at::Tensor& weights) const = 0;

  /// `logits` as float [batch, logits_dimension()]; ModelError otherwise.
  at::Tensor checked_logits(const at::Tensor& logits) const;
  /// The weights of the batch as float [batch, 1]: the weight column's values, or ones.
  at::Tensor example_weights(const Features& features, const at::Tensor& logits) const;

 private:
  HeadOptions options_;
};

/// Adds accuracy, precision and recall of `probabilities` above each of `thresholds` against
/// `labels` to `metrics`, under TensorFlow's keys ("accuracy/positive_threshold_0.5", ...).
void AddThresholdMetrics(MetricMap& metrics, const at::Tensor& labels, const at::Tensor& probabilities,
                         const at::Tensor& weights, const std::vector<double>& thresholds);

/// `prefix` followed by `threshold` as printf's "%g" writes it, TensorFlow's metric keys of a
/// threshold: ThresholdKey("recall/positive_threshold_", 0.5) is "recall/positive_threshold_0.5".
std::string ThresholdKey(const std::string& prefix, double threshold);

}  // namespace est::canned
