#pragma once
/// The accuracy of always predicting the more frequent class (the binary head's
/// accuracy_baseline in tf.estimator).

#include <string>

#include "estimator/metrics/metric.h"

namespace est::metrics {

/// From binary labels (their weighted mean m): max(m, 1 - m), the best accuracy a model that
/// predicts one class for every example reaches. State {sum(weights * labels), sum(weights)};
/// 0 when the weights sum to 0. Kind "accuracy_baseline". `weights` (optional) must broadcast
/// to the labels' shape.
MetricPtr AccuracyBaseline(const at::Tensor& labels, const at::Tensor& weights = {});

}  // namespace est::metrics
