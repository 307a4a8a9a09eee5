#include "estimator/metrics/accuracy_baseline.h"

#include <ATen/ops/stack.h>

#include <algorithm>

#include "estimator/metrics/metric_inputs.h"

namespace est::metrics {
namespace {

class AccuracyBaselineMetric : public Metric {
 public:
  explicit AccuracyBaselineMetric(const at::Tensor& state) : Metric(state) {}

  double result() const override {
    const double* sums = state_data(2);
    const double positive = sums[0];
    const double total = sums[1];
    return total == 0.0 ? 0.0 : std::max(positive, total - positive) / total;
  }
  std::string kind() const override { return "accuracy_baseline"; }
  std::shared_ptr<Metric> clone() const override { return std::make_shared<AccuracyBaselineMetric>(*this); }
};

}  // namespace

MetricPtr AccuracyBaseline(const at::Tensor& labels, const at::Tensor& weights) {
  const std::string kind = "accuracy_baseline";
  const at::Tensor values = detail::Squeezed(kind, "labels", labels).to(at::kDouble);
  const at::Tensor w = detail::BroadcastWeights(kind, weights, values);
  return std::make_shared<AccuracyBaselineMetric>(at::stack({w.mul(values).sum(), w.sum()}));
}

}  // namespace est::metrics
