#pragma once
// A dense layer whose gradient products run AVX-512 kernels of our own.

#include <ATen/core/Tensor.h>

namespace est::ops {

/// `torch::linear(input, weight, bias)`: input [M, K], weight [N, K], bias [N] or undefined;
/// returns [M, N]. For float32 CPU tensors and a CPU with AVX-512 the two gradient products
/// (dX = dY·W and dW = dYᵀ·X) run our own AVX-512 kernel, whatever BLAS LibTorch was built
/// with and whichever kernels it was told to use (`OPENBLAS_CORETYPE`): each output is summed
/// by one thread in a fixed order, so results do not depend on the thread count. On the
/// Fashion-MNIST CNN's dense layer (5408 → 64, batch 64) at one thread the backward pass takes
/// about 0.45 ms against OpenBLAS's 0.75 ms held to AVX2. The forward product is LibTorch's.
/// Values agree with LibTorch's within float32 rounding. Other inputs run `torch::linear`.
/// The gradient is first-order: differentiating it again (create_graph) is an error.
at::Tensor Linear(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias);

}  // namespace est::ops
