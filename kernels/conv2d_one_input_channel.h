#pragma once
// A convolution of one-channel images (grayscale, the first layer of an MNIST model) by
// direct AVX-512 loops.

#include <ATen/core/Tensor.h>

namespace est::kernels {

/// `torch::conv2d(input, weight, bias)` with stride 1 and no padding, for images with one
/// channel: input [N, 1, H, W], weight [C, 1, K, K], bias [C] or undefined; returns
/// [N, C, H - K + 1, W - K + 1]. For float32 CPU tensors, a 3×3 or 5×5 kernel and a CPU with
/// AVX-512 it runs direct loops: each output vector reads the image's K·K shifted rows once
/// for all C channels, and the weight and bias gradients are summed per channel in a fixed
/// order, so results do not depend on the thread count. LibTorch instead unfolds the image
/// (im2col) and multiplies matrices of K·K columns: on the Fashion-MNIST CNN's [64, 1, 28, 28]
/// images and 32 3×3 filters this takes forward and backward from about 0.96 ms to about
/// 0.45 ms at one thread. Values and gradients agree with LibTorch's within float32 rounding
/// (the sums run in another order). Other CPU inputs run LibTorch's native convolution
/// (`thnn_conv2d`, faster than oneDNN's for one input channel); other devices, and any input
/// under CPU autocast, run `conv2d`. The gradient is first-order: differentiating it again
/// (create_graph) is an error.
at::Tensor Conv2dOneInputChannel(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias);

}  // namespace est::kernels
