#pragma once
// What Conv2dOneInputChannel shares with the fused convolution + relu + max-pool. Internal to
// the kernels.

#include <ATen/core/Tensor.h>
#include <torch/csrc/autograd/function.h>

#include <cstdint>

namespace est::kernels::detail {

/// The sizes of one convolution: N images [H, W], C filters [K, K], stride 1, no padding.
struct ConvGeometry {
  int64_t images, channels, height, width, kernel;
  int64_t out_height() const { return height - kernel + 1; }
  int64_t out_width() const { return width - kernel + 1; }
};

/// The geometry of input [N, 1, H, W] and weight [C, 1, K, K].
ConvGeometry ConvGeometryOf(const at::Tensor& input, const at::Tensor& weight);

/// Whether Conv2dOneInputChannel runs its own kernels for these tensors (see its header).
bool Conv2dOneInputChannelFastPath(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias);

/// Output rows [y_begin, y_end) of one image [H, W] convolved with every filter (weight
/// [C, K·K] and bias [C] or null, float32): row y of filter c goes to
/// out + c · filter_stride + (y − y_begin) · out_width. The fast path's kernel; each value
/// is the same whichever rows are asked for.
void ConvolveRows(const float* image, const float* weight, const float* bias, float* out, int64_t filter_stride,
                  const ConvGeometry& g, int64_t y_begin, int64_t y_end);

/// The fast path's gradients {input (when `input_grad`), weight, bias (when `has_bias`)} of
/// the convolution of `input` by `weight`, from the contiguous output gradient `grad`.
torch::autograd::tensor_list Conv2dOneInputChannelGradients(const at::Tensor& input, const at::Tensor& weight,
                                                            bool has_bias, const at::Tensor& grad, bool input_grad);

}  // namespace est::kernels::detail
