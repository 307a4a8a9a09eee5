#include "estimator/canned/head_labels.h"

#include <ATen/ops/logical_or.h>
#include <ATen/ops/nonzero.h>

#include "common/error.h"

namespace est::canned::detail {

at::Tensor LabelsOfShape(const std::string& head, const at::Tensor& labels, int64_t batch, int64_t dimension,
                         at::ScalarType dtype) {
  EST_CHECK(labels.defined(), DataError, head, ": the batch has no labels");
  const bool fits = (labels.dim() == 2 && labels.size(0) == batch && labels.size(1) == dimension) ||
                    (labels.dim() == 1 && labels.size(0) == batch && dimension == 1);
  EST_CHECK(fits, DataError, head, ": labels of shape ", labels.sizes(), " where [", batch, ", ", dimension,
            "]", dimension == 1 ? " or [" + std::to_string(batch) + "]" : std::string(), " was expected");
  return labels.detach().reshape({batch, dimension}).to(dtype);
}

void CheckLabelRange(const std::string& head, const at::Tensor& labels, double low, double high) {
  const at::Tensor values = labels.to(at::kDouble).reshape({-1});
  const at::Tensor outside = at::logical_or(values.lt(low), values.gt(high)).logical_or_(values.isnan());
  const at::Tensor where = at::nonzero(outside);
  if (where.numel() == 0) return;
  const double first = values[where[0][0].item<int64_t>()].item<double>();
  EST_THROW(DataError, head, ": label ", first, " is outside [", low, ", ", high, "]");
}

std::vector<double> CheckedThresholds(const std::string& head, std::vector<double> thresholds) {
  for (double threshold : thresholds) {
    EST_CHECK(threshold > 0.0 && threshold < 1.0, ConfigError, head, ": threshold ", threshold,
              " is not in (0, 1)");
  }
  return thresholds;
}

}  // namespace est::canned::detail
