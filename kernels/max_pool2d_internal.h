#pragma once
// What the tests of MaxPool2dWithIndices ask of it. Internal to the kernels and their tests.

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

namespace est::kernels::detail {

/// Whether MaxPool2dWithIndices computes this pooling with its own kernels on this CPU (within
/// the cap of AllowVectorBits), rather than handing it to LibTorch's.
bool MaxPool2dIsOurs(const at::Tensor& input, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                     at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode);

}  // namespace est::kernels::detail
