#include "estimator/canned/regression_head.h"

#include "common/error.h"
#include "estimator/canned/head_labels.h"
#include "estimator/metrics/mean.h"

namespace est::canned {
namespace {

constexpr const char* kRegressionHead = "RegressionHead";

}  // namespace

RegressionHead::RegressionHead(int64_t label_dimension, HeadOptions options)
    : Head(std::move(options)), label_dimension_(label_dimension) {
  EST_CHECK(label_dimension >= 1, ConfigError, kRegressionHead, ": label_dimension is ", label_dimension,
            "; it must be at least 1");
}

TensorMap RegressionHead::predictions(const at::Tensor& logits) const {
  return {{"predictions", checked_logits(logits)}};
}

at::Tensor RegressionHead::processed_labels(const at::Tensor& labels, const at::Tensor& logits) const {
  return detail::LabelsOfShape(kRegressionHead, labels, logits.size(0), label_dimension_, logits.scalar_type());
}

at::Tensor RegressionHead::unweighted_loss(const at::Tensor& labels, const at::Tensor& logits) const {
  return logits.sub(labels).square();
}

MetricMap RegressionHead::head_metrics(const at::Tensor& labels, const at::Tensor& logits, const at::Tensor& loss,
                                       const at::Tensor& weights) const {
  return {{"average_loss", metrics::Mean(loss, weights)},
          {"label/mean", metrics::Mean(labels, weights)},
          {"prediction/mean", metrics::Mean(logits, weights)}};
}

}  // namespace est::canned
