#include "estimator/canned/multi_label_head.h"

#include <ATen/ops/arange.h>
#include <ATen/ops/binary_cross_entropy_with_logits.h>
#include <ATen/ops/sigmoid.h>

#include "common/error.h"
#include "estimator/canned/head_labels.h"
#include "estimator/metrics/auc.h"
#include "estimator/metrics/mean.h"

namespace est::canned {
namespace {

constexpr const char* kMultiLabelHead = "MultiLabelHead";

}  // namespace

MultiLabelHead::MultiLabelHead(int64_t n_classes, HeadOptions options, std::vector<double> thresholds,
                               std::vector<int64_t> classes_for_class_based_metrics)
    : Head(std::move(options)),
      n_classes_(n_classes),
      thresholds_(detail::CheckedThresholds(kMultiLabelHead, std::move(thresholds))),
      class_metrics_(std::move(classes_for_class_based_metrics)) {
  EST_CHECK(n_classes >= 2, ConfigError, kMultiLabelHead, ": n_classes is ", n_classes, "; it must be at least 2");
  for (int64_t id : class_metrics_) {
    EST_CHECK(id >= 0 && id < n_classes, ConfigError, kMultiLabelHead, ": class ", id,
              " of classes_for_class_based_metrics is not in [0, ", n_classes, ")");
  }
}

TensorMap MultiLabelHead::predictions(const at::Tensor& logits) const {
  const at::Tensor checked = checked_logits(logits);
  return {{"logits", checked},
          {"probabilities", at::sigmoid(checked)},
          {"all_class_ids",
           at::arange(n_classes_, checked.options().dtype(at::kLong)).expand({checked.size(0), n_classes_})}};
}

at::Tensor MultiLabelHead::processed_labels(const at::Tensor& labels, const at::Tensor& logits) const {
  at::Tensor processed =
      detail::LabelsOfShape(kMultiLabelHead, labels, logits.size(0), n_classes_, logits.scalar_type());
  detail::CheckLabelRange(kMultiLabelHead, processed, 0.0, 1.0);
  return processed;
}

at::Tensor MultiLabelHead::unweighted_loss(const at::Tensor& labels, const at::Tensor& logits) const {
  return at::binary_cross_entropy_with_logits(logits, labels, {}, {}, at::Reduction::None)
      .mean(/*dim=*/{1}, /*keepdim=*/true);
}

MetricMap MultiLabelHead::head_metrics(const at::Tensor& labels, const at::Tensor& logits, const at::Tensor& loss,
                                       const at::Tensor& weights) const {
  const at::Tensor probabilities = at::sigmoid(logits);
  MetricMap result = {
      {"average_loss", metrics::Mean(loss, weights)},
      {"auc", metrics::Auc(labels, probabilities, 200, metrics::AucCurve::kROC, weights)},
      {"auc_precision_recall", metrics::Auc(labels, probabilities, 200, metrics::AucCurve::kPR, weights)},
  };
  AddThresholdMetrics(result, labels, probabilities, weights, thresholds_);
  for (int64_t id : class_metrics_) {
    const std::string suffix = "/class" + std::to_string(id);
    const at::Tensor class_labels = labels.select(1, id);
    const at::Tensor class_probabilities = probabilities.select(1, id);
    result["probability_mean" + suffix] = metrics::Mean(class_probabilities, weights);
    result["auc" + suffix] = metrics::Auc(class_labels, class_probabilities, 200, metrics::AucCurve::kROC, weights);
    result["auc_precision_recall" + suffix] =
        metrics::Auc(class_labels, class_probabilities, 200, metrics::AucCurve::kPR, weights);
  }
  return result;
}

}  // namespace est::canned
