#pragma once
/// InputLayer (tf.keras.layers.DenseFeatures, tf.compat.v1.feature_column.input_layer): the dense
/// columns of a model, concatenated in the order of their names, with the variables they read.

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <string>
#include <vector>

#include "estimator/feature_columns/column_inputs.h"
#include "estimator/feature_columns/feature_column.h"

namespace est::feature_columns {

/// A module whose parameters are its columns' variables, named `<prefix><variable name>`
/// ("input_from_feature_columns/input_layer/user_embedding/embedding_weights" with TensorFlow's
/// DNN prefix); forward gives float32 [batch, output_dimension()].
class InputLayerImpl : public torch::nn::Module {
 public:
  /// ConfigError for no columns, two columns of one name, or a name with '.', which LibTorch's
  /// parameter names cannot hold.
  explicit InputLayerImpl(std::vector<DenseColumnPtr> columns, std::string prefix = "");

  /// The columns' dense tensors side by side.
  at::Tensor forward(const ColumnInputs& inputs);

  /// The sum of the columns' dense dimensions.
  int64_t output_dimension() const { return output_dimension_; }
  /// The columns, sorted by name.
  const std::vector<DenseColumnPtr>& columns() const { return columns_; }

 private:
  std::vector<DenseColumnPtr> columns_;
  ColumnVariables variables_;
  int64_t output_dimension_ = 0;
};
TORCH_MODULE(InputLayer);

/// Registers each of `columns`' variables once (columns sharing a table share it) on `module` as
/// `<prefix><name>`, created by its initial value, into `variables` by its own name.
void RegisterColumnVariables(torch::nn::Module& module, const std::vector<DenseColumnPtr>& columns,
                             const std::string& prefix, ColumnVariables& variables);

}  // namespace est::feature_columns
