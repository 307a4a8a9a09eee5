#pragma once
// Which vector instructions the CPU kernels of est::kernels may use, and what their fast
// paths share. Internal to the kernels and their tests.
//
// The dispatch is ours (a function per width under __attribute__((target)), chosen once per
// call from CpuVectorBits) rather than Highway's (Debian's libhwy-dev 1.0.3): FusedAdamStep must
// round exactly as LibTorch's own vectorized Adam does, one fused multiply-add where LibTorch's
// makes one and a separate multiply and add elsewhere, on every width. Highway's MulAdd is a
// fused multiply-add on some targets and two roundings on others, so its bits would change with
// the target; here each path's instructions are written out and tested bit for bit against
// LibTorch. Three widths (512, 256, scalar) and a cap for tests (AllowVectorBits) are the
// whole of the dispatch, and the kernels add no dependency.

#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace est::kernels::detail {

/// The widest vectors this CPU has: 512 (AVX-512 F, BW and VL), 256 (AVX2 with FMA) or 0
/// (none of these, or not x86-64).
int CpuVectorBits();

/// CpuVectorBits within the cap of AllowVectorBits: the widest vectors the kernels use.
int UsableVectorBits();

/// Caps UsableVectorBits at `bits` (512, the default, 256 or 0), so that tests cover each
/// kernel on a machine that has AVX-512.
void AllowVectorBits(int bits);

/// Whether LibTorch's CPU autocast is on in this thread: the kernels, which autocast does not
/// know, defer to LibTorch's ops then, which it does.
bool CpuAutocastEnabled();

/// Whether a JIT trace (torch::jit::tracer) records this thread's operators: it cannot see inside
/// our kernels, so every kernel runs LibTorch's operators then, which it records (an export's
/// traced program then holds LibTorch's operators).
bool InJitTrace();

/// Whether `tensor` is a contiguous float32 tensor on the CPU: what the kernels read.
inline bool IsContiguousFloatCpu(const at::Tensor& tensor) {
  return tensor.device().is_cpu() && tensor.scalar_type() == at::kFloat && tensor.is_contiguous();
}

/// Whether `bias` is absent (undefined) or a contiguous float32 CPU vector with one value for
/// each of the `outputs` rows of a weight: the biases the kernels take.
inline bool IsAbsentOrFloatBias(const at::Tensor& bias, int64_t outputs) {
  return !bias.defined() || (IsContiguousFloatCpu(bias) && bias.dim() == 1 && bias.size(0) == outputs);
}

/// `bias`, or an empty tensor with `weight`'s options where there is none: LibTorch 1.13's
/// Function::apply cannot take an undefined tensor. Inside, `numel() > 0` tells the two apart.
at::Tensor BiasOrEmpty(const at::Tensor& bias, const at::Tensor& weight);

/// The grain for at::parallel_for over items of `work_per_item` units each (outputs, or
/// multiply-adds), so that one task holds about `work_per_task` units and at least one item.
inline int64_t ParallelGrain(int64_t work_per_item, int64_t work_per_task) {
  return std::max<int64_t>(1, work_per_task / std::max<int64_t>(1, work_per_item));
}

/// Marks a function compiled for AVX-512 F, BW and VL: call it only where
/// UsableVectorBits() >= 512.
#define EST_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

/// Open and close a stretch of AVX-512 kernels. GCC 12 warns that the pass-through operands
/// inside some intrinsics (_mm512_maskz_loadu_ps, _mm512_reduce_add_ps, _mm512_max_ps,
/// _mm512_cvtepu8_epi32) may be used uninitialized; no mask ever reads them.
#if defined(__GNUC__) && !defined(__clang__)
#define EST_BEGIN_AVX512_KERNELS                                   \
  _Pragma("GCC diagnostic push")                                   \
      _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"") \
          _Pragma("GCC diagnostic ignored \"-Wuninitialized\"")
#define EST_END_AVX512_KERNELS _Pragma("GCC diagnostic pop")
#else
#define EST_BEGIN_AVX512_KERNELS
#define EST_END_AVX512_KERNELS
#endif

#if defined(__x86_64__)
/// Lanes [0, 8) of an 8-lane vector that hold one of the first `count` values, as an AVX2 mask:
/// none for count ≤ 0, all for count ≥ 8.
__attribute__((target("avx2"))) inline __m256i FirstLanes8(int64_t count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::min<int64_t>(std::max<int64_t>(count, 0), 8))),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/// Stores the first `count` lanes of `values` (none when count ≤ 0): a plain store for all
/// eight, since a masked store is slow on some CPUs (microcoded on AMD's).
__attribute__((target("avx2"))) inline void StoreFirstLanes8(float* to, int64_t count, __m256 values) {
  if (count >= 8)
    _mm256_storeu_ps(to, values);
  else if (count > 0)
    _mm256_maskstore_ps(to, FirstLanes8(count), values);
}

/// The mask of the lanes of a 16-float vector that hold one of `count` values: none for
/// count ≤ 0, all for count ≥ 16.
EST_TARGET_AVX512 inline __mmask16 FirstLanes16(int64_t count) {
  if (count <= 0) return 0;
  return count >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << count) - 1u);
}
#endif

}  // namespace est::kernels::detail
