#include "estimator/feature_columns/bucketized_column.h"

#include <ATen/ops/one_hot.h>

#include <utility>

#include "common/error.h"
#include "estimator/feature_columns/column_inputs.h"

namespace est::feature_columns {
namespace {

const NumericColumn& CheckedSource(const std::shared_ptr<const NumericColumn>& source) {
  EST_CHECK(source != nullptr, ConfigError, "bucketized_column: the source column is null");
  EST_CHECK(source->options().shape().size() == 1, ConfigError, "bucketized_column: source \"", source->key(),
            "\" has ", source->options().shape().size(), " dimensions; it must have one");
  return *source;
}

}  // namespace

BucketizedColumn::BucketizedColumn(std::shared_ptr<const NumericColumn> source, const std::vector<double>& boundaries)
    : source_(std::move(source)), bucketizer_(CheckedSource(source_).key(), boundaries) {}

int64_t BucketizedColumn::num_buckets() const { return bucketizer_.num_buckets(source_->dense_dimension()); }

at::Tensor BucketizedColumn::dense_tensor(const ColumnInputs& inputs, const ColumnVariables&) const {
  const at::Tensor buckets = bucketizer_.buckets(source_->values(inputs));
  return at::one_hot(buckets, bucketizer_.buckets_per_element()).reshape({inputs.batch_size(), -1}).to(at::kFloat);
}

CategoricalIds BucketizedColumn::ids(const ColumnInputs& inputs) const {
  return bucketizer_.ids(source_->values(inputs));
}

std::shared_ptr<const BucketizedColumn> bucketized_column(std::shared_ptr<const NumericColumn> source,
                                                          const std::vector<double>& boundaries) {
  return std::make_shared<BucketizedColumn>(std::move(source), boundaries);
}

}  // namespace est::feature_columns
