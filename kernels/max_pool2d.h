#pragma once
// LibTorch's max_pool2d_with_indices on contiguous float32 CPU tensors, for any window.

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include <tuple>

namespace est::kernels {

/// `at::max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)` on
/// the CPU, with LibTorch's output and indices to the bit for every window, stride, padding,
/// dilation and ceil mode: a window's maximum is its first in row-major order, a NaN wins over
/// numbers and the last NaN of a window wins, indices are flat within each (H, W) plane.
/// Computed sixteen (AVX-512) or eight (AVX2) outputs of a row at a time, where LibTorch 1.13
/// to 2.x compute the contiguous (NCHW) layout one output at a time: on [64, 32, 26, 26] with a
/// 2×2 window at one thread, about 0.5 ms against 6 ms. Inputs it does not speed up (another
/// dtype or device, a channels-last layout, whose LibTorch kernel is vectorized already, planes of
/// 2^31 values or more) and arguments LibTorch refuses go to LibTorch's own CPU kernel, which
/// raises its own errors.
std::tuple<at::Tensor, at::Tensor> MaxPool2dWithIndices(const at::Tensor& input, at::IntArrayRef kernel_size,
                                                        at::IntArrayRef stride, at::IntArrayRef padding,
                                                        at::IntArrayRef dilation, bool ceil_mode);

}  // namespace est::kernels
