#pragma once
/// The network of TensorFlow's canned DNN estimators: the dense feature columns, hidden layers
/// (each dense with an activation, then dropout in training, then batch normalization) and a
/// logits layer, with TensorFlow's variable names and layouts so that a checkpoint reads as
/// TensorFlow's: "input_from_feature_columns/input_layer/<column>/embedding_weights",
/// "hiddenlayer_<i>/kernel" [in, out], "hiddenlayer_<i>/bias",
/// "hiddenlayer_<i>/batchnorm_<i>/{gamma,beta,moving_mean,moving_variance}", "logits/kernel",
/// "logits/bias" (under the module name "dnn").

#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "estimator/feature_columns/input_layer.h"

namespace est::canned {

/// The DNN's shape, with TensorFlow's defaults.
struct DnnNetworkOptions {
  /// The width of each hidden layer, in order (at least one layer).
  TORCH_ARG(std::vector<int64_t>, hidden_units);
  /// Applied after each hidden layer's affine map; ReLU when empty.
  TORCH_ARG(std::function<at::Tensor(const at::Tensor&)>, activation);
  /// The probability of zeroing an output of a hidden layer in training.
  TORCH_ARG(std::optional<double>, dropout);
  /// Batch normalization after each hidden layer (Keras': momentum 0.999, epsilon 0.001).
  TORCH_ARG(bool, batch_norm) = false;
};

/// The network: forward gives logits [batch, logits_dimension]. Kernels start glorot-uniform and
/// biases at zero, as Keras' Dense layers.
class DnnNetworkImpl : public torch::nn::Module {
 public:
  /// ConfigError as CheckDnnNetworkOptions.
  DnnNetworkImpl(std::vector<feature_columns::DenseColumnPtr> columns, int64_t logits_dimension, DnnNetworkOptions options);

  /// The logits of a batch; dropout and batch statistics in training mode (is_training()).
  at::Tensor forward(const feature_columns::ColumnInputs& inputs);

 private:
  struct Layer {
    at::Tensor kernel;
    at::Tensor bias;
    at::Tensor gamma, beta, moving_mean, moving_variance;
  };
  Layer dense_layer(const std::string& scope, int64_t inputs, int64_t units);

  feature_columns::DenseFeatures features_;
  DnnNetworkOptions options_;
  std::vector<Layer> hidden_;
  Layer logits_;
};
TORCH_MODULE(DnnNetwork);

/// ConfigError for no hidden layers, a width below 1, or a dropout outside [0, 1).
void CheckDnnNetworkOptions(const DnnNetworkOptions& options);

/// Keras' glorot_uniform: uniform in ±sqrt(6 / (fan_in + fan_out)) for a kernel [fan_in, fan_out].
at::Tensor GlorotUniform(int64_t fan_in, int64_t fan_out);

}  // namespace est::canned
