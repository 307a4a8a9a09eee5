#pragma once
// ReLU followed by a 2×2 max-pool, in one pass over the input and one over the gradient.

#include <ATen/core/Tensor.h>

namespace est::kernels {

/// `torch::max_pool2d(torch::relu(input), 2)`, with the same values and the same gradient
/// (NaN and ties included: the first maximum of a window wins, a NaN wins over numbers), for a
/// float32 CPU tensor [N, C, H, W] in contiguous (NCHW) layout, computed in one pass with the
/// window's winner kept as one byte. LibTorch's relu and max-pool take four passes over the
/// activations and keep 64-bit indices: on the Fashion-MNIST CNN's [64, 32, 26, 26] activations
/// at one thread this pair goes from about 13 ms to about 0.4 ms per step (forward and backward,
/// AVX-512; 0.7 ms with the AVX2 kernels).
/// Any other input (another device, dtype or layout) runs the two LibTorch ops. The gradient
/// is first-order: differentiating it again (create_graph) is an error.
at::Tensor ReluMaxPool2x2(const at::Tensor& input);

}  // namespace est::kernels
