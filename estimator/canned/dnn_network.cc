#include "estimator/canned/dnn_network.h"

#include <ATen/ops/batch_norm.h>
#include <ATen/ops/dropout.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/zeros.h>

#include <cmath>
#include <string>
#include <utility>

#include "common/error.h"

namespace est::canned {
namespace {

constexpr double kBatchNormMomentum = 0.999;
constexpr double kBatchNormEpsilon = 0.001;

}  // namespace

at::Tensor GlorotUniform(int64_t fan_in, int64_t fan_out) {
  const double limit = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  return at::rand({fan_in, fan_out}, at::kFloat).mul_(2 * limit).sub_(limit);
}

void CheckDnnNetworkOptions(const DnnNetworkOptions& options) {
  EST_CHECK(!options.hidden_units().empty(), ConfigError, "DNN: hidden_units is empty; give at least one layer");
  for (size_t i = 0; i < options.hidden_units().size(); ++i) {
    EST_CHECK(options.hidden_units()[i] >= 1, ConfigError, "DNN: hidden layer ", i, " has ",
              options.hidden_units()[i], " units; it needs at least 1");
  }
  EST_CHECK(!options.dropout() || (*options.dropout() >= 0 && *options.dropout() < 1), ConfigError, "DNN: dropout ",
            options.dropout().value_or(0), " is not in [0, 1)");
}

DnnNetworkImpl::DnnNetworkImpl(std::vector<feature_columns::DenseColumnPtr> columns, int64_t logits_dimension,
                               DnnNetworkOptions options)
    : features_(std::move(columns), *this, "input_from_feature_columns/input_layer/"), options_(std::move(options)) {
  CheckDnnNetworkOptions(options_);
  int64_t width = features_.output_dimension();
  for (size_t i = 0; i < options_.hidden_units().size(); ++i) {
    const int64_t units = options_.hidden_units()[i];
    const std::string scope = "hiddenlayer_" + std::to_string(i);
    Layer layer = dense_layer(scope, width, units);
    if (options_.batch_norm()) {
      const std::string norm = scope + "/batchnorm_" + std::to_string(i) + "/";
      layer.gamma = register_parameter(norm + "gamma", at::ones({units}));
      layer.beta = register_parameter(norm + "beta", at::zeros({units}));
      layer.moving_mean = register_buffer(norm + "moving_mean", at::zeros({units}));
      layer.moving_variance = register_buffer(norm + "moving_variance", at::ones({units}));
    }
    hidden_.push_back(std::move(layer));
    width = units;
  }
  logits_ = dense_layer("logits", width, logits_dimension);
}

DnnNetworkImpl::Layer DnnNetworkImpl::dense_layer(const std::string& scope, int64_t inputs, int64_t units) {
  Layer layer;
  layer.kernel = register_parameter(scope + "/kernel", GlorotUniform(inputs, units));
  layer.bias = register_parameter(scope + "/bias", at::zeros({units}));
  return layer;
}

at::Tensor DnnNetworkImpl::forward(const feature_columns::ColumnInputs& inputs) {
  at::Tensor net = features_(inputs);
  for (const Layer& layer : hidden_) {
    net = net.matmul(layer.kernel).add(layer.bias);
    net = options_.activation() ? options_.activation()(net) : at::relu(net);
    if (options_.dropout() && is_training()) net = at::dropout(net, *options_.dropout(), /*train=*/true);
    if (layer.gamma.defined()) {
      net = at::batch_norm(net, layer.gamma, layer.beta, layer.moving_mean, layer.moving_variance, is_training(),
                           1.0 - kBatchNormMomentum, kBatchNormEpsilon, /*cudnn_enabled=*/false);
    }
  }
  return net.matmul(logits_.kernel).add(logits_.bias);
}

}  // namespace est::canned
