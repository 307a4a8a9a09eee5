#pragma once
/// Feature columns (tf.feature_column): how the raw features of a tf.train.Example (or of a CSV
/// row, or of tensors built in memory) become a model's input. A column is immutable and shared
/// (std::shared_ptr<const ...>); columns build on columns (bucketized on numeric, embedding on
/// categorical), as in TensorFlow.
///
/// - A DenseColumn gives each example a vector of dense_dimension() floats: numeric,
///   bucketized (one-hot), indicator (multi-hot), embedding. The InputLayer concatenates them.
/// - A CategoricalColumn gives each example ids in [0, num_buckets()): hash bucket,
///   vocabulary, identity, bucketized, crossed, weighted. An embedding or indicator column or
///   the LinearModel makes numbers of them.
///
/// Parsing (ParsingPlan) turns every string into ids while the input pipeline reads the record,
/// so a model sees int64 and float tensors only (categorical_ids.h has the layout).

#include <ATen/core/Tensor.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "estimator/feature_columns/categorical_ids.h"

namespace est::feature_columns {

class ColumnInputs;
class ParsingPlan;

/// Anything make_parse_example_spec, the InputLayer or the LinearModel takes.
class FeatureColumn {
 public:
  virtual ~FeatureColumn() = default;

  /// TensorFlow's name of the column ("age", "age_bucketized", "a_X_b", "user_embedding"):
  /// the InputLayer and the LinearModel order columns by it and name variables after it.
  virtual std::string name() const = 0;

  /// Adds the raw features the column reads to `plan` (make_parse_example_spec).
  virtual void plan_parsing(ParsingPlan& plan) const = 0;
};

/// A variable a dense column reads (an embedding table), created by the InputLayer or the
/// LinearModel that holds the column.
struct ColumnVariable {
  /// Its name under the layer (TensorFlow's: "user_embedding/embedding_weights").
  std::string name;
  /// Its shape.
  std::vector<int64_t> shape;
  /// Its initial value, of `shape` (called once, when the layer is made).
  std::function<at::Tensor()> initial_value;
  /// Whether training updates it.
  bool trainable = true;
};

/// The variables of a layer by ColumnVariable::name.
using ColumnVariables = std::map<std::string, at::Tensor>;

/// A column that gives each example dense_dimension() floats.
class DenseColumn : public virtual FeatureColumn {
 public:
  /// The number of floats per example (TensorFlow's variable_shape, flattened).
  virtual int64_t dense_dimension() const = 0;

  /// The variables dense_tensor() reads; none for most columns.
  virtual std::vector<ColumnVariable> variables() const { return {}; }

  /// float32 [batch, dense_dimension()] of the batch's raw features, reading the layer's
  /// `variables` (holding at least those of variables()).
  virtual at::Tensor dense_tensor(const ColumnInputs& inputs, const ColumnVariables& variables) const = 0;
};

/// A column that gives each example ids in [0, num_buckets()).
class CategoricalColumn : public virtual FeatureColumn {
 public:
  /// The number of distinct ids.
  virtual int64_t num_buckets() const = 0;

  /// The batch's ids in the padded layout (with weights for a weighted column).
  virtual CategoricalIds ids(const ColumnInputs& inputs) const = 0;
};

/// Shared handles, as columns are passed around.
using FeatureColumnPtr = std::shared_ptr<const FeatureColumn>;
/// A shared dense column.
using DenseColumnPtr = std::shared_ptr<const DenseColumn>;
/// A shared categorical column.
using CategoricalColumnPtr = std::shared_ptr<const CategoricalColumn>;

/// `columns` sorted by name, as TensorFlow orders them; ConfigError naming a name that two of
/// them share, or a null column.
template <typename Column>
std::vector<std::shared_ptr<const Column>> SortedByName(std::vector<std::shared_ptr<const Column>> columns) {
  for (const auto& column : columns) EST_CHECK(column != nullptr, ConfigError, "feature columns: a null column");
  std::sort(columns.begin(), columns.end(), [](const auto& a, const auto& b) { return a->name() < b->name(); });
  for (size_t i = 1; i < columns.size(); ++i) {
    EST_CHECK(columns[i - 1]->name() != columns[i]->name(), ConfigError, "feature columns: two columns are named \"",
              columns[i]->name(), "\"; each column must be given once");
  }
  return columns;
}

}  // namespace est::feature_columns
