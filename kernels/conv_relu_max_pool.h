#pragma once
// A convolution, relu and max-pool as one op, the convolution's output kept in oneDNN's
// channel-blocked layout between them: what FusedForward puts in a traced graph's place of the
// three ops.

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include <cstdint>
#include <vector>

namespace est::kernels {

/// LibTorch's convolution and max-pool arguments of ConvReluMaxPool2d, each one or two values
/// (height, width), as `at::conv2d` and `at::max_pool2d` take them.
struct ConvReluMaxPoolArgs {
  std::vector<int64_t> stride, padding, dilation;                          ///< the convolution's
  std::vector<int64_t> kernel_size, pool_stride, pool_padding, pool_dilation;  ///< the max-pool's
  bool ceil_mode = false;
};

/// `at::max_pool2d(at::relu(at::conv2d(input, weight, bias, stride, padding, dilation)),
/// kernel_size, pool_stride, pool_padding, pool_dilation, ceil_mode)`, differentiable. Where
/// ConvReluMaxPool2dTakes, the convolution runs on oneDNN (as LibTorch's does) into its blocked
/// layout, relu and the max-pool read that layout in one pass that writes only the pooled
/// output and a byte a window, and the backward writes the convolution's output gradient
/// blocked for oneDNN's weight gradient: the convolution's output is never reordered to NCHW,
/// read by relu, or kept for the backward. Values and gradients equal those of LibTorch's three
/// ops (tests: to the bit where oneDNN makes the same choices as LibTorch's call). Anything else
/// runs LibTorch's three ops, which raise their own errors. A gradient of the gradient
/// (create_graph) is computed by LibTorch's differentiable ops.
at::Tensor ConvReluMaxPool2d(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                             const ConvReluMaxPoolArgs& args);

/// Whether ConvReluMaxPool2d computes these arguments itself on this build and CPU: float32
/// contiguous NCHW input and weight of one group, a float32 bias or none, no autocast or
/// forward-mode gradient, windows of up to 256 positions, and a oneDNN (the one LibTorch links)
/// whose convolution here writes a blocked layout of 8 or 16 channels.
bool ConvReluMaxPool2dTakes(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                            const ConvReluMaxPoolArgs& args);

namespace detail {

/// The channel block (8 or 16) of the layout ConvReluMaxPool2d keeps the convolution's output
/// in for these arguments, or 0 where it does not take them: for tests.
int ConvReluMaxPool2dBlock(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                           const ConvReluMaxPoolArgs& args);

/// Caps oneDNN's kernels, process-wide, at AVX2 (as on CPUs without AVX-512, where it lays out
/// 8 channels a block), and forgets the convolutions planned so far: for tests. False where
/// oneDNN is not built in or refuses (it may keep the wider ISA once it has made kernels).
bool LimitOneDnnToAvx2();

}  // namespace detail

}  // namespace est::kernels
