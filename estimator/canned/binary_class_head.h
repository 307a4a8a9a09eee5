#pragma once
/// BinaryClassHead (tf.estimator.BinaryClassHead): one logit per example, sigmoid
/// cross-entropy loss.

#include <vector>

#include "estimator/canned/head.h"

namespace est::canned {

/// Labels in [0, 1] ([batch] or [batch, 1], any numeric dtype; soft labels allowed). Predictions:
/// "logits" and "logistic" [batch, 1], "probabilities" [batch, 2], "class_ids" [batch, 1]
/// (int64: 1 where the logit is above 0), "all_class_ids" [batch, 2]. Metrics: accuracy,
/// accuracy_baseline, auc, auc_precision_recall, average_loss, label/mean, precision,
/// prediction/mean, recall, and for each of `thresholds` accuracy, precision and recall at
/// "positive_threshold_<t>".
class BinaryClassHead : public Head {
 public:
  /// A head whose extra metrics use `thresholds` (each in (0, 1), else ConfigError).
  explicit BinaryClassHead(HeadOptions options = {}, std::vector<double> thresholds = {});

  int64_t logits_dimension() const override { return 1; }
  TensorMap predictions(const at::Tensor& logits) const override;

 protected:
  at::Tensor processed_labels(const at::Tensor& labels, const at::Tensor& logits) const override;
  at::Tensor unweighted_loss(const at::Tensor& labels, const at::Tensor& logits) const override;
  MetricMap head_metrics(const at::Tensor& labels, const at::Tensor& logits, const at::Tensor& loss,
                         const at::Tensor& weights) const override;

 private:
  std::vector<double> thresholds_;
};

}  // namespace est::canned
