#pragma once
// Which vector instructions the CPU kernels of est::ops may use, and what their fast paths
// share. Internal to the ops and their tests.

#include <ATen/core/Tensor.h>

#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace est::ops::detail {

/// The widest vectors this CPU has, within the cap of AllowVectorBits: 512 (AVX-512 F, BW
/// and VL), 256 (AVX2 with FMA) or 0 (none of these, or not x86-64).
int UsableVectorBits();

/// Caps UsableVectorBits at `bits` (512, the default, 256 or 0), so that tests cover each
/// kernel on a machine that has AVX-512.
void AllowVectorBits(int bits);

/// Whether `tensor` is a contiguous float32 tensor on the CPU: what the kernels read.
inline bool IsContiguousFloatCpu(const at::Tensor& tensor) {
  return tensor.device().is_cpu() && tensor.scalar_type() == at::kFloat && tensor.is_contiguous();
}

#if defined(__x86_64__)
/// The mask of the lanes of a 16-float vector that hold one of `count` values: none for
/// count ≤ 0, all for count ≥ 16.
__attribute__((target("avx512f"))) inline __mmask16 FirstLanes16(int64_t count) {
  if (count <= 0) return 0;
  return count >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << count) - 1u);
}
#endif

}  // namespace est::ops::detail
