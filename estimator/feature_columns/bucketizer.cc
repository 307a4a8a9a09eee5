#include "estimator/feature_columns/bucketizer.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <utility>

#include "common/error.h"

namespace est::feature_columns {

Bucketizer::Bucketizer(std::string key, const std::vector<double>& boundaries) : key_(std::move(key)) {
  EST_CHECK(!boundaries.empty(), ConfigError, "bucketized_column '", name(), "': boundaries must not be empty");
  for (size_t i = 1; i < boundaries.size(); ++i)
    EST_CHECK(boundaries[i - 1] < boundaries[i], ConfigError, "bucketized_column '", name(),
              "': boundaries must be strictly increasing, but boundary ", i - 1, " (", boundaries[i - 1],
              ") is not below boundary ", i, " (", boundaries[i], ")");
  boundaries_.reserve(boundaries.size());
  for (double boundary : boundaries) boundaries_.push_back(static_cast<float>(boundary));
}

int64_t Bucketizer::bucket(float value) const {
  return std::upper_bound(boundaries_.begin(), boundaries_.end(), value) - boundaries_.begin();
}

at::Tensor Bucketizer::buckets(const at::Tensor& values) const {
  EST_CHECK(values.defined(), DataError, "bucketized_column '", name(), "': the values are an undefined tensor");
  const at::ScalarType type = values.scalar_type();
  EST_CHECK(at::isFloatingType(type) || at::isIntegralType(type, /*includeBool=*/false), DataError,
            "bucketized_column '", name(), "': values must be floating-point or integers, got ", c10::toString(type));
  const at::Tensor in = values.to(at::kFloat).cpu().contiguous();
  at::Tensor out = at::empty(in.sizes(), at::kLong);
  const float* value = in.data_ptr<float>();
  int64_t* bucket_of = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < in.numel(); ++i) bucket_of[i] = bucket(value[i]);
  return out;
}

CategoricalIds Bucketizer::ids(const at::Tensor& values) const {
  EST_CHECK(values.defined() && (values.dim() == 1 || values.dim() == 2), DataError, "bucketized_column '", name(),
            "': values must be a [batch] or [batch, k] tensor, got shape ",
            values.defined() ? values.sizes() : at::IntArrayRef{});
  const at::Tensor plain = buckets(values.dim() == 1 ? values.unsqueeze(1) : values);
  const int64_t dimension = plain.size(1);
  CategoricalIds out;
  out.ids = plain + at::arange(dimension, at::kLong) * buckets_per_element();
  out.lengths = at::full({plain.size(0)}, dimension, at::kLong);
  return out;
}

}  // namespace est::feature_columns
