#include "estimator/feature_columns/embedding_column.h"

#include <ATen/ops/randn.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "common/error.h"
#include "estimator/feature_columns/column_inputs.h"

namespace est::feature_columns {

EmbeddingColumn::EmbeddingColumn(CategoricalColumnPtr categorical, int64_t dimension, EmbeddingColumnOptions options,
                                 std::string shared_table)
    : categorical_(std::move(categorical)),
      dimension_(dimension),
      options_(std::move(options)),
      shared_table_(std::move(shared_table)) {
  EST_CHECK(categorical_ != nullptr, ConfigError, "embedding_column: the categorical column is null");
  EST_CHECK(dimension_ >= 1, ConfigError, "embedding_column \"", categorical_->name(), "\": dimension ", dimension_,
            "; it must be at least 1");
  EST_CHECK(!options_.max_norm() || *options_.max_norm() > 0, ConfigError, "embedding_column \"",
            categorical_->name(), "\": max_norm ", options_.max_norm().value_or(0), "; it must be positive");
}

std::string EmbeddingColumn::name() const {
  return categorical_->name() + (shared_table_.empty() ? "_embedding" : "_shared_embedding");
}

std::string EmbeddingColumn::table_name() const {
  return shared_table_.empty() ? name() + "/embedding_weights" : shared_table_;
}

std::vector<ColumnVariable> EmbeddingColumn::variables() const {
  const std::vector<int64_t> shape{categorical_->num_buckets(), dimension_};
  auto initializer = options_.initializer();
  const double stddev = 1.0 / std::sqrt(static_cast<double>(dimension_));
  auto initial_value = [shape, initializer, stddev, name = table_name()] {
    if (!initializer) return TruncatedNormal(shape, stddev);
    at::Tensor value = initializer(shape);
    EST_CHECK(value.defined() && value.sizes() == at::IntArrayRef(shape), ConfigError, "embedding table \"", name,
              "\": the initializer returned ", value.defined() ? value.sizes() : at::IntArrayRef{},
              " where ", at::IntArrayRef(shape), " was expected");
    return value.to(at::kFloat);
  };
  return {ColumnVariable{table_name(), shape, std::move(initial_value), options_.trainable()}};
}

at::Tensor EmbeddingColumn::dense_tensor(const ColumnInputs& inputs, const ColumnVariables& variables) const {
  const auto table = variables.find(table_name());
  EST_CHECK(table != variables.end(), ConfigError, "embedding_column \"", name(), "\": its table \"", table_name(),
            "\" is not among the layer's variables; read it through an InputLayer or LinearModel");
  return SafeEmbeddingLookupSparse(table->second, categorical_->ids(inputs), options_.combiner(), name(),
                                   options_.max_norm());
}

at::Tensor TruncatedNormal(const std::vector<int64_t>& shape, double stddev) {
  at::Tensor values = at::randn(shape, at::kFloat);
  for (at::Tensor outside = values.abs().gt(2.0); outside.any().item<bool>(); outside = values.abs().gt(2.0)) {
    values.masked_scatter_(outside, at::randn({outside.sum().item<int64_t>()}, at::kFloat));
  }
  return values.mul_(stddev);
}

std::shared_ptr<const EmbeddingColumn> embedding_column(CategoricalColumnPtr categorical, int64_t dimension,
                                                        EmbeddingColumnOptions options) {
  return std::make_shared<EmbeddingColumn>(std::move(categorical), dimension, std::move(options));
}

std::vector<std::shared_ptr<const EmbeddingColumn>> shared_embeddings(
    const std::vector<CategoricalColumnPtr>& categorical_columns, int64_t dimension, EmbeddingColumnOptions options,
    std::string shared_embedding_collection_name) {
  EST_CHECK(!categorical_columns.empty(), ConfigError, "shared_embeddings: no categorical columns");
  std::vector<std::string> names;
  for (const CategoricalColumnPtr& column : categorical_columns) {
    EST_CHECK(column != nullptr, ConfigError, "shared_embeddings: a null categorical column");
    EST_CHECK(column->num_buckets() == categorical_columns.front()->num_buckets(), ConfigError,
              "shared_embeddings: \"", column->name(), "\" has ", column->num_buckets(), " buckets but \"",
              categorical_columns.front()->name(), "\" has ", categorical_columns.front()->num_buckets(),
              "; columns sharing a table must have as many");
    names.push_back(column->name());
  }
  if (shared_embedding_collection_name.empty()) {
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) shared_embedding_collection_name += name + "_";
    shared_embedding_collection_name += "shared_embedding";
  }
  std::vector<std::shared_ptr<const EmbeddingColumn>> columns;
  for (const CategoricalColumnPtr& column : categorical_columns) {
    columns.push_back(std::make_shared<EmbeddingColumn>(column, dimension, options, shared_embedding_collection_name));
  }
  return columns;
}

}  // namespace est::feature_columns
