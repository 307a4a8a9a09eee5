#include "estimator/canned/head.h"

#include <ATen/ops/ones.h>

#include <cstdio>

#include "common/error.h"
#include "estimator/metrics/accuracy.h"
#include "estimator/metrics/precision_recall.h"

namespace est::canned {

at::Tensor Head::checked_logits(const at::Tensor& logits) const {
  EST_CHECK(logits.defined(), ModelError, "head: the logits are an undefined tensor");
  EST_CHECK(logits.dim() == 2 && logits.size(1) == logits_dimension(), ModelError, "head: logits of shape ",
            logits.sizes(), " where [batch, ", logits_dimension(), "] was expected");
  return logits.is_floating_point() ? logits : logits.to(at::kFloat);
}

at::Tensor Head::example_weights(const Features& features, const at::Tensor& logits) const {
  const int64_t batch = logits.size(0);
  if (options_.weight_column().empty()) return at::ones({batch, 1}, logits.options());
  const auto found = features.find(options_.weight_column());
  EST_CHECK(found != features.end(), ConfigError, "head: the weight column \"", options_.weight_column(),
            "\" is not a feature of the batch");
  const at::Tensor& weights = found->second;
  EST_CHECK(weights.numel() == batch && (weights.dim() == 1 || (weights.dim() == 2 && weights.size(1) == 1)),
            DataError, "head: the weight column \"", options_.weight_column(), "\" has shape ", weights.sizes(),
            " where [", batch, "] or [", batch, ", 1] was expected");
  return weights.detach().to(logits.scalar_type()).reshape({batch, 1});
}

at::Tensor Head::loss(const at::Tensor& labels, const at::Tensor& logits, const Features& features) const {
  const at::Tensor checked = checked_logits(logits);
  const at::Tensor per_example = unweighted_loss(processed_labels(labels, checked), checked);
  const at::Tensor weighted = per_example.mul(example_weights(features, checked));
  const at::Tensor sum = weighted.sum();
  if (options_.loss_reduction() == LossReduction::kSum) return sum;
  return sum.div(static_cast<double>(weighted.numel()));
}

MetricMap Head::metrics(const at::Tensor& labels, const at::Tensor& logits, const Features& features) const {
  const at::Tensor checked = checked_logits(logits).detach();
  const at::Tensor processed = processed_labels(labels, checked);
  MetricMap keyed = head_metrics(processed, checked, unweighted_loss(processed, checked),
                                 example_weights(features, checked));
  if (options_.name().empty()) return keyed;
  MetricMap named;
  for (auto& [key, metric] : keyed) named.emplace(key + "/" + options_.name(), std::move(metric));
  return named;
}

EstimatorSpec Head::spec(Mode mode, const Features& features, const at::Tensor& labels, const at::Tensor& logits,
                         std::vector<std::reference_wrapper<torch::optim::Optimizer>> optimizers) const {
  switch (mode) {
    case Mode::kPredict:
      return EstimatorSpec::Predict(predictions(checked_logits(logits)));
    case Mode::kEval:
      return EstimatorSpec::Eval(loss(labels, logits, features).detach(), metrics(labels, logits, features));
    case Mode::kTrain:
      EST_CHECK(!optimizers.empty(), ModelError, "head: a training spec needs at least one optimizer");
      return EstimatorSpec::Train(loss(labels, logits, features), std::move(optimizers));
  }
  EST_THROW(InternalError, "head: unknown mode");
}

void AddThresholdMetrics(MetricMap& metrics, const at::Tensor& labels, const at::Tensor& probabilities,
                         const at::Tensor& weights, const std::vector<double>& thresholds) {
  for (double threshold : thresholds) {
    const at::Tensor predicted = probabilities.gt(threshold).to(labels.scalar_type());
    metrics[ThresholdKey("accuracy/positive_threshold_", threshold)] = metrics::Accuracy(labels, predicted, weights);
    metrics[ThresholdKey("precision/positive_threshold_", threshold)] = metrics::Precision(labels, predicted, weights);
    metrics[ThresholdKey("recall/positive_threshold_", threshold)] = metrics::Recall(labels, predicted, weights);
  }
}

std::string ThresholdKey(const std::string& prefix, double threshold) {
  char formatted[32];
  std::snprintf(formatted, sizeof formatted, "%g", threshold);
  return prefix + formatted;
}

}  // namespace est::canned
