#pragma once
// A one-channel convolution, relu and 2×2 max-pool in one op: the first block of an MNIST
// model without its largest activations ever leaving the cache.

#include <ATen/core/Tensor.h>

namespace est::kernels {

/// `ReluMaxPool2x2(Conv2dOneInputChannel(input, weight, bias))`, bit for bit, values and
/// gradients. Where Conv2dOneInputChannel runs its own kernels (see its header), this one
/// convolves two rows of an image at a time into a buffer and pools them at once, so the
/// convolution's output ([64, 32, 26, 26] floats, 5.5 MB, for the Fashion-MNIST CNN) is
/// neither written nor read back; backward is the two ops' backward. Elsewhere it runs the
/// two ops. The gradient is first-order.
at::Tensor Conv2dReluMaxPool2x2(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias);

}  // namespace est::kernels
