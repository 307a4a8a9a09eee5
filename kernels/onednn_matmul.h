#pragma once
// Float32 matrix products on oneDNN's brgemm matmul, in the place of LibTorch's BLAS call.

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>

namespace est::kernels {

/// Whether this build and CPU run OneDnnMm's products on oneDNN: the build links the oneDNN
/// that LibTorch itself links (EST_ONEDNN_MATMUL; a pip LibTorch carries its own copy inside),
/// and oneDNN's matmul on this CPU is its brgemm kernel (AVX-512), which computes a linear
/// layer's three products 8 to 25 % faster than OpenBLAS (docs/performance.md). Elsewhere (AVX2
/// only, where oneDNN's matmul is its plain gemm) ReplaceSlowCpuOps leaves LibTorch's kernels.
bool OneDnnMatmulRuns();

/// Whether OneDnnMm computes `a @ b` on oneDNN (or hands it to LibTorch's kernel).
bool OneDnnMatmulTakes(const at::Tensor& a, const at::Tensor& b);

/// `at::mm(self, mat2)` at LibTorch's CPU key (ReplaceSlowCpuOps registers it there): dense
/// float32 matrices (contiguous, or the transpose of a contiguous one, as a linear layer's
/// products are) on oneDNN's matmul; each element within float32's rounding of a sum of K
/// products (oneDNN sums in another order than OpenBLAS, so the last bits may differ from
/// LibTorch's). Products of under kOneDnnMatmulMinMacs multiply-adds, other dtypes, slices
/// with gaps between rows, expanded matrices and empty ones go to LibTorch's kernel.
at::Tensor OneDnnMm(const at::Tensor& self, const at::Tensor& mat2);

/// `at::addmm(self, mat1, mat2, beta, alpha)` at LibTorch's CPU key: as OneDnnMm where
/// beta = alpha = 1 and `self` is a float32 row of the product's columns (a linear layer's
/// bias, [N] or [1, N]), which oneDNN adds in the same pass; anything else goes to LibTorch's
/// kernel.
at::Tensor OneDnnAddmm(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                       const at::Scalar& beta, const at::Scalar& alpha);

/// The smallest product (M·N·K multiply-adds) OneDnnMm hands to oneDNN: below it LibTorch's
/// call costs less than oneDNN's setup.
inline constexpr int64_t kOneDnnMatmulMinMacs = 1 << 16;

}  // namespace est::kernels
