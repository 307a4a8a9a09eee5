#pragma once
/// MultiClassHead (tf.estimator.MultiClassHead): n_classes logits per example, softmax
/// cross-entropy loss.

#include <cstdint>

#include "estimator/canned/head.h"

namespace est::canned {

/// Labels are class ids in [0, n_classes) ([batch] or [batch, 1], integers). Predictions:
/// "logits" and "probabilities" [batch, n_classes], "class_ids" [batch, 1] (int64, the
/// first of the largest logits), "all_class_ids" [batch, n_classes]. Metrics: accuracy,
/// average_loss.
class MultiClassHead : public Head {
 public:
  /// A head of `n_classes` classes (more than 2, else ConfigError: BinaryClassHead is the
  /// head of two).
  explicit MultiClassHead(int64_t n_classes, HeadOptions options = {});

  int64_t logits_dimension() const override { return n_classes_; }
  TensorMap predictions(const at::Tensor& logits) const override;

 protected:
  at::Tensor processed_labels(const at::Tensor& labels, const at::Tensor& logits) const override;
  at::Tensor unweighted_loss(const at::Tensor& labels, const at::Tensor& logits) const override;
  MetricMap head_metrics(const at::Tensor& labels, const at::Tensor& logits, const at::Tensor& loss,
                         const at::Tensor& weights) const override;

 private:
  int64_t n_classes_;
};

}  // namespace est::canned
