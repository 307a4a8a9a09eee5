#pragma once
// A dense layer whose weight gradient is ready first, its small products on AVX-512 kernels
// of our own.

#include <ATen/core/Tensor.h>

namespace est::kernels {

/// `torch::linear(input, weight, bias)`: input [M, K], weight [N, K], bias [N] or undefined;
/// returns [M, N]. For float32 CPU tensors (2-D, contiguous, not under CPU autocast) it is two
/// autograd nodes: the weight's and bias's gradients (dW = dYᵀ·X) are computed, and reach the
/// weight's hooks, before the input's (dX = dY·W), so a gradient all-reduce hooked on the
/// weight starts one product earlier than with LibTorch's linear, which computes both in one
/// node. On a CPU with AVX-512 and a weight of at most 2^21 values its three products run
/// kernels of our own, whatever BLAS LibTorch was built with and whichever kernels that BLAS
/// was told to use (`OPENBLAS_CORETYPE`): each output is summed by one thread in a fixed order,
/// so results do not depend on the thread count, and agree with LibTorch's within float32
/// rounding. On the Fashion-MNIST CNN's dense layer (5408 → 64, batch 64) at one thread,
/// forward and backward took about 0.61 ms against OpenBLAS's 1.21 ms held to AVX2 on the CPU
/// they were written on, and about the same as OpenBLAS on a Zen 4, which runs AVX-512 in
/// 256-bit halves. Larger weights, and CPUs without AVX-512, run LibTorch's products as its
/// linear does, to its bits.
/// Other inputs run `torch::linear`. The output may be changed in place. The gradient is
/// first-order: differentiating it again (create_graph) is an error.
at::Tensor Linear(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias);

}  // namespace est::kernels
