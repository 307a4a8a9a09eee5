#pragma once
/// Label checks the heads share. Internal to estimator/canned/.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace est::canned::detail {

/// `labels` as [batch, dimension] of `dtype`: [batch] is taken as [batch, 1]. DataError naming
/// `head` and both shapes when the labels are undefined or of another shape.
at::Tensor LabelsOfShape(const std::string& head, const at::Tensor& labels, int64_t batch, int64_t dimension,
                         at::ScalarType dtype);

/// Checks that every label lies in [low, high]; DataError naming `head`, the first label outside
/// and the range otherwise (NaN included).
void CheckLabelRange(const std::string& head, const at::Tensor& labels, double low, double high);

/// Thresholds for metrics, each in (0, 1); ConfigError naming `head` otherwise.
std::vector<double> CheckedThresholds(const std::string& head, std::vector<double> thresholds);

}  // namespace est::canned::detail
