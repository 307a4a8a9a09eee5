#pragma once
// max_pool2d as autograd sees it on the CPU: winners kept as bytes, not 64-bit indices, and
// relu's backward folded into the pooling's.

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

namespace est::kernels {

/// `at::max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)` at autograd's
/// CPU key (ReplaceSlowCpuOps registers it there), with LibTorch's values and gradients to the
/// bit, for float32 contiguous NCHW input that MaxPool2dWithIndices computes:
/// - the forward keeps each window's winner as one byte instead of LibTorch's 64-bit index
///   (windows of up to 128 positions; larger ones go to LibTorch), and the backward writes the
///   input's gradient a row at a time where the windows do not overlap, with no zero fill first;
/// - where the input is relu's result, the backward also applies relu's backward in the same
///   pass and hands its gradient straight to relu's input, so the activation's gradient is
///   written once instead of three times (a zero fill, the scatter, then threshold_backward).
///   Hooks on the relu's output (register_hook, retain_grad) still run, in the same order.
/// Without grad mode, or for input that does not require a gradient, only the forward runs.
/// Everything else (another dtype or layout, forward-mode AD) goes to LibTorch's max_pool2d.
/// A gradient of the gradient (create_graph) is computed by LibTorch's differentiable ops.
at::Tensor MaxPool2dAutograd(const at::Tensor& input, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                             at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode);

}  // namespace est::kernels
