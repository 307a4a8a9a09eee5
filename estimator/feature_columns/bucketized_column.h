#pragma once
/// tf.feature_column.bucketized_column: a numeric column cut at boundaries, both categorical
/// (ids, in crosses, embeddings and the linear model) and dense (one-hot).

#include <memory>
#include <vector>

#include "estimator/feature_columns/bucketizer.h"
#include "estimator/feature_columns/feature_column.h"
#include "estimator/feature_columns/numeric_column.h"

namespace est::feature_columns {

/// The buckets of a numeric column of shape [k]: num_buckets() = dense_dimension() =
/// k × (boundaries + 1), ids and one-hot laid out as bucketizer.h says.
class BucketizedColumn : public DenseColumn, public CategoricalColumn {
 public:
  /// ConfigError for a source of more than one dimension, or boundaries Bucketizer refuses.
  BucketizedColumn(std::shared_ptr<const NumericColumn> source, const std::vector<double>& boundaries);

  std::string name() const override { return bucketizer_.name(); }
  void plan_parsing(ParsingPlan& plan) const override { source_->plan_parsing(plan); }
  int64_t dense_dimension() const override { return num_buckets(); }
  at::Tensor dense_tensor(const ColumnInputs& inputs, const ColumnVariables& variables) const override;
  int64_t num_buckets() const override;
  CategoricalIds ids(const ColumnInputs& inputs) const override;

 private:
  std::shared_ptr<const NumericColumn> source_;
  Bucketizer bucketizer_;
};

/// tf.feature_column.bucketized_column(source_column, boundaries).
std::shared_ptr<const BucketizedColumn> bucketized_column(std::shared_ptr<const NumericColumn> source,
                                                          const std::vector<double>& boundaries);

}  // namespace est::feature_columns
