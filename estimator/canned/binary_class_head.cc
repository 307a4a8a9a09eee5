#include "estimator/canned/binary_class_head.h"

#include <ATen/ops/arange.h>
#include <ATen/ops/argmax.h>
#include <ATen/ops/binary_cross_entropy_with_logits.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/zeros_like.h>

#include "estimator/canned/head_labels.h"
#include "estimator/metrics/accuracy.h"
#include "estimator/metrics/accuracy_baseline.h"
#include "estimator/metrics/auc.h"
#include "estimator/metrics/mean.h"
#include "estimator/metrics/precision_recall.h"

namespace est::canned {
namespace {

constexpr const char* kBinaryHead = "BinaryClassHead";

at::Tensor TwoClassLogits(const at::Tensor& logits) { return at::cat({at::zeros_like(logits), logits}, 1); }

}  // namespace

BinaryClassHead::BinaryClassHead(HeadOptions options, std::vector<double> thresholds)
    : Head(std::move(options)), thresholds_(detail::CheckedThresholds(kBinaryHead, std::move(thresholds))) {}

TensorMap BinaryClassHead::predictions(const at::Tensor& logits) const {
  const at::Tensor checked = checked_logits(logits);
  const at::Tensor two_class = TwoClassLogits(checked);
  return {{"logits", checked},
          {"logistic", at::sigmoid(checked)},
          {"probabilities", at::softmax(two_class, 1)},
          {"class_ids", at::argmax(two_class, 1, /*keepdim=*/true)},
          {"all_class_ids", at::arange(2, checked.options().dtype(at::kLong)).expand({checked.size(0), 2})}};
}

at::Tensor BinaryClassHead::processed_labels(const at::Tensor& labels, const at::Tensor& logits) const {
  at::Tensor processed = detail::LabelsOfShape(kBinaryHead, labels, logits.size(0), 1, logits.scalar_type());
  detail::CheckLabelRange(kBinaryHead, processed, 0.0, 1.0);
  return processed;
}

at::Tensor BinaryClassHead::unweighted_loss(const at::Tensor& labels, const at::Tensor& logits) const {
  return at::binary_cross_entropy_with_logits(logits, labels, {}, {}, at::Reduction::None);
}

MetricMap BinaryClassHead::head_metrics(const at::Tensor& labels, const at::Tensor& logits, const at::Tensor& loss,
                                        const at::Tensor& weights) const {
  const at::Tensor logistic = at::sigmoid(logits);
  const at::Tensor class_ids = logits.gt(0).to(labels.scalar_type());
  MetricMap result = {
      {"average_loss", metrics::Mean(loss, weights)},
      {"accuracy", metrics::Accuracy(labels, class_ids, weights)},
      {"precision", metrics::Precision(labels, class_ids, weights)},
      {"recall", metrics::Recall(labels, class_ids, weights)},
      {"prediction/mean", metrics::Mean(logistic, weights)},
      {"label/mean", metrics::Mean(labels, weights)},
      {"accuracy_baseline", metrics::AccuracyBaseline(labels, weights)},
      {"auc", metrics::Auc(labels, logistic, 200, metrics::AucCurve::kROC, weights)},
      {"auc_precision_recall", metrics::Auc(labels, logistic, 200, metrics::AucCurve::kPR, weights)},
  };
  AddThresholdMetrics(result, labels, logistic, weights, thresholds_);
  return result;
}

}  // namespace est::canned
