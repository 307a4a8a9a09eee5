#pragma once
/// tf.feature_column.embedding_column and shared_embeddings: a categorical column's ids looked
/// up in a trainable table and combined per example.

#include <torch/arg.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "estimator/feature_columns/embedding_lookup.h"
#include "estimator/feature_columns/feature_column.h"

namespace est::feature_columns {

/// embedding_column's parameters, with TensorFlow's defaults.
struct EmbeddingColumnOptions {
  /// How an example's rows are combined.
  TORCH_ARG(Combiner, combiner) = Combiner::kMean;
  /// The table's initial value from its shape; empty: TensorFlow's truncated normal (mean 0,
  /// stddev 1/sqrt(dimension), cut at two standard deviations).
  TORCH_ARG(std::function<at::Tensor(const std::vector<int64_t>& shape)>, initializer);
  /// Each looked-up row scaled to an L2 norm of at most this, before combining.
  TORCH_ARG(std::optional<double>, max_norm);
  /// Whether training updates the table.
  TORCH_ARG(bool, trainable) = true;
};

/// A [num_buckets, dimension] table looked up by the categorical column's ids
/// (SafeEmbeddingLookupSparse): dense, dense_dimension() = dimension.
class EmbeddingColumn : public DenseColumn {
 public:
  /// The column of `categorical` with its own table named `name()/embedding_weights`, or, with
  /// `shared_table` not empty, reading that table (shared_embeddings). ConfigError for a null
  /// column or a dimension below 1.
  EmbeddingColumn(CategoricalColumnPtr categorical, int64_t dimension, EmbeddingColumnOptions options,
                  std::string shared_table = "");

  /// "<categorical>_embedding" ("<categorical>_shared_embedding" when shared).
  std::string name() const override;
  void plan_parsing(ParsingPlan& plan) const override { categorical_->plan_parsing(plan); }
  int64_t dense_dimension() const override { return dimension_; }
  std::vector<ColumnVariable> variables() const override;
  at::Tensor dense_tensor(const ColumnInputs& inputs, const ColumnVariables& variables) const override;

  /// The name of the table's variable: "<name>/embedding_weights", or the shared table's
  /// collection name ("a_b_shared_embedding", TensorFlow's variable).
  std::string table_name() const;
  /// The column looked up.
  const CategoricalColumnPtr& categorical() const { return categorical_; }

 private:
  CategoricalColumnPtr categorical_;
  int64_t dimension_;
  EmbeddingColumnOptions options_;
  std::string shared_table_;
};

/// TensorFlow's default embedding initializer: truncated normal of `shape`, mean 0, `stddev`,
/// values beyond two standard deviations drawn again.
at::Tensor TruncatedNormal(const std::vector<int64_t>& shape, double stddev);

/// tf.feature_column.embedding_column(categorical_column, dimension, combiner, initializer,
/// max_norm, trainable).
std::shared_ptr<const EmbeddingColumn> embedding_column(CategoricalColumnPtr categorical, int64_t dimension,
                                                        EmbeddingColumnOptions options = {});

/// tf.feature_column.shared_embeddings: one table for several categorical columns of the same
/// num_buckets (ConfigError otherwise), named as its collection: `shared_embedding_collection_name`
/// or by default the columns' names sorted and joined by "_" followed by "_shared_embedding".
/// One column per categorical column, in order. Unlike TensorFlow 2.15's canned estimators,
/// which leave it out of their trainable variables, training updates the table.
std::vector<std::shared_ptr<const EmbeddingColumn>> shared_embeddings(
    const std::vector<CategoricalColumnPtr>& categorical_columns, int64_t dimension,
    EmbeddingColumnOptions options = {}, std::string shared_embedding_collection_name = "");

}  // namespace est::feature_columns
