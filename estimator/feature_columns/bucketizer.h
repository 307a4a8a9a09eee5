#pragma once
/// The ids of tf.feature_column.bucketized_column. With boundaries b0 < b1 < ... < bn-1 a
/// value v falls in bucket 0 when v < b0, in bucket i when b(i-1) <= v < bi, and in bucket n
/// when v >= bn-1 (TensorFlow's Bucketize op; NaN falls in bucket n). As in TensorFlow both
/// sides are float32: the numeric column casts its values to float32 (a float64 or int64
/// value is rounded first) and the op holds its boundaries as float32.
///
/// A numeric column of shape [k] gives k ids per example, one per element, the bucket of
/// element i offset by i * (n + 1) so that each element has ids of its own
/// (TensorFlow's _BucketizedColumn: num_buckets = k * (n + 1)); crossed columns and
/// embeddings take these ids, one-hot (get_dense_tensor) takes the plain buckets.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "estimator/feature_columns/categorical_ids.h"

namespace est::feature_columns {

/// The bucketing of one bucketized_column.
class Bucketizer {
 public:
  /// The column over the numeric feature `key`. ConfigError naming the column when
  /// `boundaries` is empty or not strictly increasing, as TensorFlow refuses it.
  Bucketizer(std::string key, const std::vector<double>& boundaries);

  /// The bucket of one value (already float32, as the numeric column makes it), in
  /// [0, boundaries.size()].
  int64_t bucket(float value) const;

  /// The plain bucket of every element of `values` (any shape; a floating-point or integer
  /// dtype, cast to float32), int64 of the same shape: TensorFlow's transform_feature, what
  /// one-hot encoding takes. DataError naming the column for another dtype.
  at::Tensor buckets(const at::Tensor& values) const;

  /// The ids of a batch of a numeric column of shape [k]: `values` [batch, k] (or [batch],
  /// k = 1) gives ids [batch, k] with lengths k, element i's bucket + i * (n + 1).
  /// DataError naming the column for another rank.
  CategoricalIds ids(const at::Tensor& values) const;

  /// The column's name: the source's key + "_bucketized", as TensorFlow names it.
  std::string name() const { return key_ + "_bucketized"; }
  /// The number of buckets of one element: boundaries.size() + 1.
  int64_t buckets_per_element() const { return static_cast<int64_t>(boundaries_.size()) + 1; }
  /// The number of ids of a column of `source_dimension` elements.
  int64_t num_buckets(int64_t source_dimension) const { return buckets_per_element() * source_dimension; }

 private:
  std::string key_;
  std::vector<float> boundaries_;
};

}  // namespace est::feature_columns
