#pragma once
/// RegressionHead (tf.estimator.RegressionHead): label_dimension real values per example,
/// squared-error loss.

#include <cstdint>

#include "estimator/canned/head.h"

namespace est::canned {

/// Labels are [batch, label_dimension] ([batch] when it is 1), any numeric dtype. Predictions:
/// "predictions" [batch, label_dimension] (the logits). Metrics: average_loss, label/mean,
/// prediction/mean. The loss under kSumOverBatchSize divides by batch × label_dimension.
class RegressionHead : public Head {
 public:
  /// A head of `label_dimension` (at least 1, else ConfigError) values per example.
  explicit RegressionHead(int64_t label_dimension = 1, HeadOptions options = {});

  int64_t logits_dimension() const override { return label_dimension_; }
  TensorMap predictions(const at::Tensor& logits) const override;

 protected:
  at::Tensor processed_labels(const at::Tensor& labels, const at::Tensor& logits) const override;
  at::Tensor unweighted_loss(const at::Tensor& labels, const at::Tensor& logits) const override;
  MetricMap head_metrics(const at::Tensor& labels, const at::Tensor& logits, const at::Tensor& loss,
                         const at::Tensor& weights) const override;

 private:
  int64_t label_dimension_;
};

}  // namespace est::canned
