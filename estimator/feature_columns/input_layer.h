#pragma once
/// DenseFeatures and InputLayer (tf.keras.layers.DenseFeatures): the dense columns of a model,
/// concatenated in the order of their names, with the variables they read.

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <string>
#include <vector>

#include "estimator/feature_columns/column_inputs.h"
#include "estimator/feature_columns/feature_column.h"

namespace est::feature_columns {

/// The dense part of a module of one's own: registers the columns' variables on `owner` as
/// `<prefix><variable name>` (columns sharing a table share it) and gives the columns' dense
/// tensors side by side. A canned DNN holds one under the prefix
/// "input_from_feature_columns/input_layer/", as TensorFlow names it.
class DenseFeatures {
 public:
  /// ConfigError for no columns, two columns of one name, or a variable name with '.', which
  /// LibTorch's parameter names cannot hold. `owner` must outlive this object.
  DenseFeatures(std::vector<DenseColumnPtr> columns, torch::nn::Module& owner, const std::string& prefix = "");

  /// float32 [batch, output_dimension()].
  at::Tensor operator()(const ColumnInputs& inputs) const;

  /// The sum of the columns' dense dimensions.
  int64_t output_dimension() const { return output_dimension_; }
  /// The columns, sorted by name.
  const std::vector<DenseColumnPtr>& columns() const { return columns_; }

 private:
  std::vector<DenseColumnPtr> columns_;
  ColumnVariables variables_;
  int64_t output_dimension_ = 0;
};

/// DenseFeatures as a module of its own, whose parameters are the columns' variables.
class InputLayerImpl : public torch::nn::Module {
 public:
  /// As DenseFeatures, registered on this module.
  explicit InputLayerImpl(std::vector<DenseColumnPtr> columns, const std::string& prefix = "");

  /// The columns' dense tensors side by side: float32 [batch, output_dimension()].
  at::Tensor forward(const ColumnInputs& inputs) { return features_(inputs); }

  /// The sum of the columns' dense dimensions.
  int64_t output_dimension() const { return features_.output_dimension(); }
  /// The columns, sorted by name.
  const std::vector<DenseColumnPtr>& columns() const { return features_.columns(); }

 private:
  DenseFeatures features_;
};
TORCH_MODULE(InputLayer);

/// Registers each of `columns`' variables once (columns sharing a table share it) on `module` as
/// `<prefix><name>`, created by its initial value, into `variables` by its own name.
void RegisterColumnVariables(torch::nn::Module& module, const std::vector<DenseColumnPtr>& columns,
                             const std::string& prefix, ColumnVariables& variables);

}  // namespace est::feature_columns
