// ONNX mappings of the operators layers are made of: matrix products (linear, addmm, matmul,
// baddbmm), convolutions, pooling, batch and layer normalization, softmax. Batch normalization
// in inference is a constant scale and shift, folded here from its running statistics.

#include <ATen/ATen.h>

#include <algorithm>

#include "estimator/export/onnx_op_context.h"

namespace est {
namespace onnx_layer_ops {
namespace {

/// aten::linear(x, weight, bias): Gemm for a matrix x, MatMul and Add for more dimensions.
void Linear(OnnxOpContext& c) {
  const at::ScalarType dtype = c.output_dtype();
  const std::string x = c.tensor(0, dtype);
  const std::string bias = c.none(2) ? "" : c.tensor(2, dtype);
  if (c.rank(0) == 2 && c.rank(1) == 2) {
    c.set(0, c.add("Gemm", {x, c.tensor(1, dtype), bias}, {OnnxIntAttribute("transB", 1)}));
    return;
  }
  const std::string weight_t = c.dynamic(1)
                                   ? c.add("Transpose", {c.tensor(1, dtype)}, {OnnxIntsAttribute("perm", {1, 0})})
                                   : c.derived(1, c.constant(1).to(dtype).t().contiguous(), "_t");
  const std::string product = c.add("MatMul", {x, weight_t});
  c.set(0, bias.empty() ? product : c.add("Add", {product, bias}));
}

/// aten::addmm(bias, a, b, beta, alpha): beta·bias + alpha·a·b, ONNX's Gemm.
void Addmm(OnnxOpContext& c) {
  const at::ScalarType dtype = c.output_dtype();
  const double beta = c.inputs() > 3 ? c.number(3) : 1;
  const double alpha = c.inputs() > 4 ? c.number(4) : 1;
  c.set(0, c.add("Gemm", {c.tensor(1, dtype), c.tensor(2, dtype), beta == 0 ? "" : c.tensor(0, dtype)},
                 {OnnxFloatAttribute("alpha", alpha), OnnxFloatAttribute("beta", beta)}));
}

/// aten::baddbmm(input, a, b, beta, alpha): beta·input + alpha·(a @ b), batched.
void Baddbmm(OnnxOpContext& c) {
  const at::ScalarType dtype = c.output_dtype();
  const double beta = c.inputs() > 3 ? c.number(3) : 1;
  const double alpha = c.inputs() > 4 ? c.number(4) : 1;
  std::string product = c.add("MatMul", {c.tensor(1, dtype), c.tensor(2, dtype)});
  if (alpha != 1) product = c.add("Mul", {product, c.graph().scalar(alpha, dtype)});
  if (beta == 0) return c.set(0, product);
  std::string input = c.tensor(0, dtype);
  if (beta != 1) input = c.add("Mul", {input, c.graph().scalar(beta, dtype)});
  c.set(0, c.add("Add", {input, product}));
}

/// `values` for `spatial` dimensions: itself, or its one value repeated.
std::vector<int64_t> PerDimension(const OnnxOpContext& c, std::vector<int64_t> values, int64_t spatial,
                                  const std::string& what) {
  if (values.size() == 1) values.assign(static_cast<size_t>(spatial), values[0]);
  if (static_cast<int64_t>(values.size()) != spatial)
    c.fail("has " + what + " of " + std::to_string(values.size()) + " values for " + std::to_string(spatial) +
           " spatial dimensions");
  return values;
}

/// ONNX's pads (all begins, then all ends) of LibTorch's symmetric padding.
std::vector<int64_t> Pads(const std::vector<int64_t>& padding) {
  std::vector<int64_t> pads = padding;
  pads.insert(pads.end(), padding.begin(), padding.end());
  return pads;
}

/// A convolution of input 0 by weight 1 and bias 2 (None for none).
void Convolution(OnnxOpContext& c, const std::vector<int64_t>& stride, const c10::IValue& padding,
                 const std::vector<int64_t>& dilation, int64_t groups, bool transposed,
                 const std::vector<int64_t>& output_padding) {
  const at::ScalarType dtype = c.output_dtype();
  const std::vector<int64_t> weight_sizes = c.sizes(1);
  const int64_t spatial = static_cast<int64_t>(weight_sizes.size()) - 2;
  if (spatial < 1) c.fail("has a weight of rank " + std::to_string(weight_sizes.size()) + "; expected 3 or more");
  const std::vector<int64_t> kernel(weight_sizes.begin() + 2, weight_sizes.end());
  const std::vector<int64_t> dilations = PerDimension(c, dilation, spatial, "dilation");
  std::vector<int64_t> pads;
  if (padding.isString()) {
    const std::string mode = padding.toStringRef();
    pads.assign(static_cast<size_t>(2 * spatial), 0);
    if (mode == "same") {  // LibTorch puts the odd one of the total padding at the end
      for (int64_t d = 0; d < spatial; ++d) {
        const int64_t total = dilations[d] * (kernel[d] - 1);
        pads[d] = total / 2;
        pads[d + spatial] = total - total / 2;
      }
    } else if (mode != "valid") {
      c.fail("has padding '" + mode + "'; expected 'same', 'valid' or sizes");
    }
  } else {
    pads = Pads(PerDimension(c, padding.toIntVector(), spatial, "padding"));
  }
  const std::vector<int64_t> strides = PerDimension(c, stride, spatial, "stride");
  std::vector<onnx::AttributeProto> attributes{
      OnnxIntsAttribute("kernel_shape", kernel), OnnxIntsAttribute("strides", strides), OnnxIntsAttribute("pads", pads),
      OnnxIntsAttribute("dilations", dilations), OnnxIntAttribute("group", groups)};
  if (transposed) {
    const std::vector<int64_t> padding_out = PerDimension(c, output_padding, spatial, "output_padding");
    attributes.push_back(OnnxIntsAttribute("output_padding", padding_out));
  }
  const std::string bias = c.none(2) ? "" : c.tensor(2, dtype);
  c.set(0, c.add(transposed ? "ConvTranspose" : "Conv", {c.tensor(0, dtype), c.tensor(1, dtype), bias}, attributes));
}

/// The spatial dimensions of a pooling operator: N of its name's "Nd".
int64_t PoolDimensions(const OnnxOpContext& c) {
  const std::string kind = c.kind();
  return kind.size() > 2 && kind.back() == 'd' ? kind[kind.size() - 2] - '0' : 2;
}

/// aten::max_poolNd(x, kernel, stride, padding, dilation, ceil_mode).
void MaxPool(OnnxOpContext& c) {
  const int64_t spatial = PoolDimensions(c);
  const std::vector<int64_t> kernel = PerDimension(c, c.integers(1), spatial, "kernel_size");
  std::vector<int64_t> stride = c.integers(2);
  if (stride.empty()) stride = kernel;
  c.set(0, c.add("MaxPool", {c.tensor(0)},
                 {OnnxIntsAttribute("kernel_shape", kernel),
                  OnnxIntsAttribute("strides", PerDimension(c, stride, spatial, "stride")),
                  OnnxIntsAttribute("pads", Pads(PerDimension(c, c.integers(3), spatial, "padding"))),
                  OnnxIntsAttribute("dilations", PerDimension(c, c.integers(4), spatial, "dilation")),
                  OnnxIntAttribute("ceil_mode", c.boolean(5) ? 1 : 0)}));
}

/// aten::avg_poolNd(x, kernel, stride, padding, ceil_mode, count_include_pad[, divisor_override]).
void AveragePool(OnnxOpContext& c) {
  if (c.inputs() > 6 && !c.none(6)) c.fail("has a divisor_override, which ONNX's AveragePool lacks");
  const int64_t spatial = PoolDimensions(c);
  const std::vector<int64_t> kernel = PerDimension(c, c.integers(1), spatial, "kernel_size");
  std::vector<int64_t> stride = c.integers(2);
  if (stride.empty()) stride = kernel;
  c.set(0, c.add("AveragePool", {c.tensor(0)},
                 {OnnxIntsAttribute("kernel_shape", kernel),
                  OnnxIntsAttribute("strides", PerDimension(c, stride, spatial, "stride")),
                  OnnxIntsAttribute("pads", Pads(PerDimension(c, c.integers(3), spatial, "padding"))),
                  OnnxIntAttribute("ceil_mode", c.boolean(4) ? 1 : 0),
                  OnnxIntAttribute("count_include_pad", c.boolean(5) ? 1 : 0)}));
}

/// aten::adaptive_avg_poolNd(x, output_size): global where the output is all 1s, a fixed pool
/// where the input's spatial sizes are fixed multiples of the output's.
void AdaptiveAveragePool(OnnxOpContext& c) {
  const int64_t spatial = PoolDimensions(c);
  const std::vector<int64_t> output = PerDimension(c, c.integers(1), spatial, "output_size");
  const std::vector<int64_t> sizes = c.sizes(0);
  if (std::all_of(output.begin(), output.end(), [](int64_t size) { return size == 1; }))
    return c.set(0, c.add("GlobalAveragePool", {c.tensor(0)}));
  std::vector<int64_t> kernel;
  for (int64_t d = 0; d < spatial; ++d) {
    const int64_t in = sizes.at(sizes.size() - spatial + d);
    if (in < 0 || output[d] <= 0 || in % output[d] != 0)
      c.fail("pools a size that is not a fixed multiple of the output's");
    kernel.push_back(in / output[d]);
  }
  c.set(0, c.add("AveragePool", {c.tensor(0)},
                 {OnnxIntsAttribute("kernel_shape", kernel), OnnxIntsAttribute("strides", kernel)}));
}

/// aten::batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps, ...)
/// in inference: x · scale + shift along dimension 1, scale = weight / √(var + eps) and
/// shift = bias − mean · scale, as LibTorch's CPU kernel computes it.
void BatchNorm(OnnxOpContext& c) {
  if (c.boolean(5)) c.fail("normalizes by the batch's statistics (training=true); expected inference");
  if (c.none(3) || c.none(4)) c.fail("has no running statistics");
  const at::ScalarType dtype = c.output_dtype();
  const at::Tensor mean = c.constant(3).to(at::kDouble);
  const at::Tensor var = c.constant(4).to(at::kDouble);
  const at::Tensor weight = c.none(1) ? at::ones_like(mean) : c.constant(1).to(at::kDouble);
  const at::Tensor bias = c.none(2) ? at::zeros_like(mean) : c.constant(2).to(at::kDouble);
  const at::Tensor scale = weight / at::sqrt(var + c.number(7));
  const at::Tensor shift = bias - mean * scale;
  std::vector<int64_t> shape(static_cast<size_t>(std::max<int64_t>(c.rank(0) - 1, 1)), 1);
  shape[0] = mean.numel();
  const std::string scaled =
      c.add("Mul", {c.tensor(0, dtype), c.derived(1, scale.to(dtype).reshape(shape), "_scale")});
  c.set(0, c.add("Add", {scaled, c.derived(2, shift.to(dtype).reshape(shape), "_shift")}));
}

/// aten::layer_norm(x, normalized_shape, weight, bias, eps, ...): LayerNormalization from opset 17,
/// before it (x − mean) / √(var + eps) · weight + bias over the last dimensions.
void LayerNorm(OnnxOpContext& c) {
  const at::ScalarType dtype = c.output_dtype();
  const std::vector<int64_t> normalized = c.integers(1);
  const int64_t count = static_cast<int64_t>(normalized.size());
  const double eps = c.number(4);
  const std::string x = c.tensor(0, dtype);
  if (c.opset() >= 17) {
    const std::string weight = c.none(2) ? c.graph().initializer(at::ones(normalized, at::TensorOptions().dtype(dtype)),
                                                                 "layer_norm_ones")
                                         : c.tensor(2, dtype);
    const std::string bias = c.none(3) ? "" : c.tensor(3, dtype);
    c.set(0, c.add("LayerNormalization", {x, weight, bias},
                   {OnnxIntAttribute("axis", -count), OnnxFloatAttribute("epsilon", eps)}));
    return;
  }
  std::vector<int64_t> axes;
  for (int64_t d = -count; d < 0; ++d) axes.push_back(d);
  const std::vector<onnx::AttributeProto> over{OnnxIntsAttribute("axes", axes), OnnxIntAttribute("keepdims", 1)};
  const std::string centred = c.add("Sub", {x, c.add("ReduceMean", {x}, over)});
  const std::string var = c.add("ReduceMean", {c.add("Mul", {centred, centred})}, over);
  const std::string deviation = c.add("Sqrt", {c.add("Add", {var, c.graph().scalar(eps, dtype)})});
  std::string y = c.add("Div", {centred, deviation});
  if (!c.none(2)) y = c.add("Mul", {y, c.tensor(2, dtype)});
  if (!c.none(3)) y = c.add("Add", {y, c.tensor(3, dtype)});
  c.set(0, y);
}

/// aten::softmax/log_softmax(x, dim, dtype) as `op_type` along dim.
OnnxMapping SoftmaxAlong(const std::string& op_type) {
  return [op_type](OnnxOpContext& c) {
    const int64_t dim = c.axis(c.integer(1), c.rank(0));
    c.set(0, c.add(op_type, {c.tensor(0, c.output_dtype())}, {OnnxIntAttribute("axis", dim)}));
  };
}

}  // namespace
}  // namespace onnx_layer_ops

void AddOnnxLayerMappings(OnnxMappings& m) {
  using namespace onnx_layer_ops;
  m["aten::linear"] = Linear;
  m["aten::addmm"] = Addmm;
  m["aten::baddbmm"] = Baddbmm;
  for (const char* product : {"aten::matmul", "aten::mm", "aten::bmm"}) {
    m[product] = [](OnnxOpContext& c) {
      const at::ScalarType dtype = c.output_dtype();
      c.set(0, c.add("MatMul", {c.tensor(0, dtype), c.tensor(1, dtype)}));
    };
  }
  // _convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups, ...)
  m["aten::_convolution"] = [](OnnxOpContext& c) {
    Convolution(c, c.integers(3), c.input(4).example[0], c.integers(5), c.integer(8), c.boolean(6), c.integers(7));
  };
  // convNd(x, weight, bias, stride, padding, dilation, groups)
  for (const char* conv : {"aten::conv1d", "aten::conv2d", "aten::conv3d"}) {
    m[conv] = [](OnnxOpContext& c) {
      if (c.dynamic(4)) c.fail("has padding that depends on the request");
      Convolution(c, c.integers(3), c.input(4).example[0], c.integers(5), c.integer(6), false, {});
    };
  }
  // conv_transposeNd(x, weight, bias, stride, padding, output_padding, groups, dilation)
  for (const char* conv : {"aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d"}) {
    m[conv] = [](OnnxOpContext& c) {
      if (c.dynamic(4)) c.fail("has padding that depends on the request");
      Convolution(c, c.integers(3), c.input(4).example[0], c.integers(7), c.integer(6), true, c.integers(5));
    };
  }
  for (const char* pool : {"aten::max_pool1d", "aten::max_pool2d", "aten::max_pool3d"}) m[pool] = MaxPool;
  for (const char* pool : {"aten::avg_pool1d", "aten::avg_pool2d", "aten::avg_pool3d"}) m[pool] = AveragePool;
  for (const char* pool : {"aten::adaptive_avg_pool1d", "aten::adaptive_avg_pool2d", "aten::adaptive_avg_pool3d"})
    m[pool] = AdaptiveAveragePool;
  m["aten::batch_norm"] = BatchNorm;
  m["aten::layer_norm"] = LayerNorm;
  m["aten::softmax"] = SoftmaxAlong("Softmax");
  m["aten::_softmax"] = SoftmaxAlong("Softmax");
  m["aten::log_softmax"] = SoftmaxAlong("LogSoftmax");
  m["aten::_log_softmax"] = SoftmaxAlong("LogSoftmax");
}

}  // namespace est
