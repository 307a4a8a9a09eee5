#pragma once
// What ReluMaxPool2x2 shares with the fused convolution + relu + max-pool. Internal to the
// kernels.

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace est::kernels::detail {

/// The kernel of one output row of ReluMaxPool2x2: `windows` 2×2 windows over input rows
/// `top` and `bottom` (2·windows values each) give `out` and each window's one-byte winner
/// `code`.
using ReluMaxPoolForwardRow = void (*)(const float* top, const float* bottom, float* out, uint8_t* code,
                                       int64_t windows);
/// The widest such kernel the CPU has (see UsableVectorBits).
ReluMaxPoolForwardRow ReluMaxPoolForwardRowKernel();

/// ReluMaxPool2x2's input gradient [N, C, height, width] from the output gradient `grad` and
/// the winners' codes [N, C, height / 2, width / 2] of its forward pass.
at::Tensor ReluMaxPool2x2Backward(const at::Tensor& grad, const at::Tensor& code, int64_t height, int64_t width);

}  // namespace est::kernels::detail
