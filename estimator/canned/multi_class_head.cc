#include "estimator/canned/multi_class_head.h"

#include <ATen/ops/arange.h>
#include <ATen/ops/argmax.h>
#include <ATen/ops/cross_entropy_loss.h>
#include <ATen/ops/softmax.h>

#include "common/error.h"
#include "estimator/canned/head_labels.h"
#include "estimator/metrics/accuracy.h"
#include "estimator/metrics/mean.h"

namespace est::canned {
namespace {

constexpr const char* kMultiClassHead = "MultiClassHead";

}  // namespace

MultiClassHead::MultiClassHead(int64_t n_classes, HeadOptions options)
    : Head(std::move(options)), n_classes_(n_classes) {
  EST_CHECK(n_classes > 2, ConfigError, kMultiClassHead, ": n_classes is ", n_classes,
            "; it must be more than 2 (BinaryClassHead is the head of two classes)");
}

TensorMap MultiClassHead::predictions(const at::Tensor& logits) const {
  const at::Tensor checked = checked_logits(logits);
  return {{"logits", checked},
          {"probabilities", at::softmax(checked, 1)},
          {"class_ids", at::argmax(checked, 1, /*keepdim=*/true)},
          {"all_class_ids",
           at::arange(n_classes_, checked.options().dtype(at::kLong)).expand({checked.size(0), n_classes_})}};
}

at::Tensor MultiClassHead::processed_labels(const at::Tensor& labels, const at::Tensor& logits) const {
  EST_CHECK(!labels.defined() || !labels.is_floating_point(), DataError, kMultiClassHead,
            ": labels must be integer class ids, not ", labels.scalar_type());
  at::Tensor processed = detail::LabelsOfShape(kMultiClassHead, labels, logits.size(0), 1, at::kLong);
  detail::CheckLabelRange(kMultiClassHead, processed, 0.0, static_cast<double>(n_classes_ - 1));
  return processed;
}

at::Tensor MultiClassHead::unweighted_loss(const at::Tensor& labels, const at::Tensor& logits) const {
  return at::cross_entropy_loss(logits, labels.reshape({-1}), {}, at::Reduction::None).unsqueeze(1);
}

MetricMap MultiClassHead::head_metrics(const at::Tensor& labels, const at::Tensor& logits, const at::Tensor& loss,
                                       const at::Tensor& weights) const {
  return {{"average_loss", metrics::Mean(loss, weights)},
          {"accuracy", metrics::Accuracy(labels, at::argmax(logits, 1, /*keepdim=*/true), weights)}};
}

}  // namespace est::canned
