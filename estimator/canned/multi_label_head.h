#pragma once
/// MultiLabelHead (tf.estimator.MultiLabelHead): n_classes independent yes/no answers per
/// example, sigmoid cross-entropy averaged over the classes.

#include <cstdint>
#include <vector>

#include "estimator/canned/head.h"

namespace est::canned {

/// Labels are multi-hot [batch, n_classes] (0 or 1, any numeric dtype). Predictions: "logits"
/// and "probabilities" [batch, n_classes] (sigmoid), "all_class_ids" [batch, n_classes].
/// Metrics: average_loss, auc, auc_precision_recall (over every class's answers), accuracy,
/// precision and recall at "positive_threshold_<t>" for each threshold, and for each class of
/// `classes_for_class_based_metrics` probability_mean/class<i>, auc/class<i> and
/// auc_precision_recall/class<i>.
class MultiLabelHead : public Head {
 public:
  /// A head of `n_classes` (at least 2) classes; thresholds in (0, 1) and class ids in
  /// [0, n_classes), else ConfigError.
  MultiLabelHead(int64_t n_classes, HeadOptions options = {}, std::vector<double> thresholds = {},
                 std::vector<int64_t> classes_for_class_based_metrics = {});

  int64_t logits_dimension() const override { return n_classes_; }
  TensorMap predictions(const at::Tensor& logits) const override;

 protected:
  at::Tensor processed_labels(const at::Tensor& labels, const at::Tensor& logits) const override;
  at::Tensor unweighted_loss(const at::Tensor& labels, const at::Tensor& logits) const override;
  MetricMap head_metrics(const at::Tensor& labels, const at::Tensor& logits, const at::Tensor& loss,
                         const at::Tensor& weights) const override;

 private:
  int64_t n_classes_;
  std::vector<double> thresholds_;
  std::vector<int64_t> class_metrics_;
};

}  // namespace est::canned
