#include "kernels/max_pool2d.h"

#include "kernels/cpu_vectors.h"
#include "kernels/max_pool2d_internal.h"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/max_pool2d_with_indices_cpu_dispatch.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace est::kernels {
namespace {

// One pooling of [planes, height, width] into [planes, out_height, out_width]: LibTorch's
// arguments with their defaults filled in.
struct PoolGeometry {
  int64_t planes = 0, height = 0, width = 0, out_height = 0, out_width = 0;
  int64_t kernel_h = 0, kernel_w = 0, stride_h = 0, stride_w = 0;
  int64_t pad_h = 0, pad_w = 0, dilation_h = 0, dilation_w = 0;
};

// The one or two values of a pair argument, the second repeating the first.
bool PairOf(at::IntArrayRef values, int64_t& first, int64_t& second) {
  if (values.size() != 1 && values.size() != 2) return false;
  first = values[0];
  second = values.back();
  return true;
}

// LibTorch's pooling_output_shape: the number of windows along one dimension.
int64_t PooledSize(int64_t size, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode) {
  const int64_t numerator = size + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t pooled = numerator / stride - ((numerator % stride != 0 && numerator < 0) ? 1 : 0) + 1;
  if (ceil_mode && (pooled - 1) * stride >= size + pad) --pooled;
  return pooled;
}

// Whether every window along one dimension holds at least one position of the input: LibTorch
// gives an empty window -inf and an index outside it, which these kernels do not reproduce.
bool EveryWindowReadsInput(int64_t size, int64_t pooled, int64_t kernel, int64_t pad, int64_t stride,
                           int64_t dilation) {
  for (int64_t out = 0; out < pooled; ++out) {
    bool reads = false;
    for (int64_t k = 0; k < kernel && !reads; ++k) {
      const int64_t at = out * stride - pad + k * dilation;
      reads = at >= 0 && at < size;
    }
    if (!reads) return false;
  }
  return true;
}

// The geometry of a pooling these kernels compute, or nullopt for anything else (LibTorch's
// kernel then computes it, or raises its error).
std::optional<PoolGeometry> GeometryOf(const at::Tensor& input, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                       at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode) {
  if (!detail::IsContiguousFloatCpu(input) || input.suggest_memory_format() != at::MemoryFormat::Contiguous ||
      (input.dim() != 3 && input.dim() != 4) || input.numel() == 0)
    return std::nullopt;
  PoolGeometry g;
  if (!PairOf(kernel_size, g.kernel_h, g.kernel_w) || !PairOf(padding, g.pad_h, g.pad_w) ||
      !PairOf(dilation, g.dilation_h, g.dilation_w))
    return std::nullopt;
  if (stride.empty()) {
    g.stride_h = g.kernel_h;
    g.stride_w = g.kernel_w;
  } else if (!PairOf(stride, g.stride_h, g.stride_w)) {
    return std::nullopt;
  }
  constexpr int64_t kLimit = int64_t{1} << 24;  // keeps every position and index in 32 bits
  for (int64_t v : {g.kernel_h, g.kernel_w, g.stride_h, g.stride_w, g.dilation_h, g.dilation_w})
    if (v < 1 || v > kLimit) return std::nullopt;
  if (g.pad_h < 0 || g.pad_w < 0 || g.pad_h > g.kernel_h / 2 || g.pad_w > g.kernel_w / 2) return std::nullopt;
  g.height = input.size(-2);
  g.width = input.size(-1);
  g.planes = input.numel() / (g.height * g.width);
  if (g.height * g.width > (int64_t{1} << 30) || g.width > kLimit) return std::nullopt;
  g.out_height = PooledSize(g.height, g.kernel_h, g.pad_h, g.stride_h, g.dilation_h, ceil_mode);
  g.out_width = PooledSize(g.width, g.kernel_w, g.pad_w, g.stride_w, g.dilation_w, ceil_mode);
  if (g.out_height < 1 || g.out_width < 1 || g.out_width > kLimit) return std::nullopt;
  if (!EveryWindowReadsInput(g.height, g.out_height, g.kernel_h, g.pad_h, g.stride_h, g.dilation_h) ||
      !EveryWindowReadsInput(g.width, g.out_width, g.kernel_w, g.pad_w, g.stride_w, g.dilation_w))
    return std::nullopt;
  return g;
}

// How a window's column is read: one load (stride 1), two loads and a shuffle (stride 2, with
// AVX-512), or a gather (any other stride; AVX2's, which on AMD's Zen 4 takes half the time of
// AVX-512's 16-lane gather).
enum class PoolColumns { kContiguous, kEveryOther, kGathered };

#if defined(__x86_64__)
EST_BEGIN_AVX512_KERNELS

// One (H, W) plane, sixteen outputs of a row at a time. A lane takes a window's value when it
// is the first the window reads, is greater than the lane's maximum, or is NaN: LibTorch's rule.
template <PoolColumns kColumns>
EST_TARGET_AVX512 void PoolPlane512(const float* in, float* out, int64_t* indices, const PoolGeometry& g) {
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i lane_step = _mm512_mullo_epi32(iota, _mm512_set1_epi32(static_cast<int>(g.stride_w)));
  const __m512i zero = _mm512_setzero_si512();
  const __m512i width = _mm512_set1_epi32(static_cast<int>(g.width));
  const __m512 lowest = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t oh = 0; oh < g.out_height; ++oh) {
    const int64_t top = oh * g.stride_h - g.pad_h;
    for (int64_t ow = 0; ow < g.out_width; ow += 16) {
      const __mmask16 lanes = detail::FirstLanes16(g.out_width - ow);
      __m512 best = lowest;
      __m512i best_at = zero;
      __mmask16 seen = 0;
      for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
        const int64_t ih = top + kh * g.dilation_h;
        if (ih < 0 || ih >= g.height) continue;
        const float* row = in + ih * g.width;
        const __m512i row_start = _mm512_set1_epi32(static_cast<int>(ih * g.width));
        for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
          const int64_t first = ow * g.stride_w - g.pad_w + kw * g.dilation_w;  // lane 0's column
          const __m512i column = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(first)), lane_step);
          const __mmask16 inside = lanes & _mm512_cmpge_epi32_mask(column, zero) & _mm512_cmplt_epi32_mask(column, width);
          __m512 value;
          if constexpr (kColumns == PoolColumns::kContiguous) {
            value = _mm512_mask_loadu_ps(lowest, inside, row + first);
          } else {
            static_assert(kColumns == PoolColumns::kEveryOther, "other strides gather with AVX2's kernel");
            const __m512i low = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(first)), iota);
            const __m512i high = _mm512_add_epi32(low, _mm512_set1_epi32(16));
            const __mmask16 low_inside = _mm512_cmpge_epi32_mask(low, zero) & _mm512_cmplt_epi32_mask(low, width);
            const __mmask16 high_inside = _mm512_cmpge_epi32_mask(high, zero) & _mm512_cmplt_epi32_mask(high, width);
            const __m512 a = _mm512_mask_loadu_ps(lowest, low_inside, row + first);
            const __m512 b = _mm512_mask_loadu_ps(lowest, high_inside, row + first + 16);
            value = _mm512_permutex2var_ps(a, evens, b);
          }
          const __mmask16 take = inside & (_mm512_cmp_ps_mask(value, best, _CMP_GT_OQ) |
                                           _mm512_cmp_ps_mask(value, value, _CMP_UNORD_Q) | static_cast<__mmask16>(~seen));
          best = _mm512_mask_mov_ps(best, take, value);
          best_at = _mm512_mask_mov_epi32(best_at, take, _mm512_add_epi32(row_start, column));
          seen = static_cast<__mmask16>(seen | inside);
        }
      }
      _mm512_mask_storeu_ps(out + oh * g.out_width + ow, lanes, best);
      int64_t* to = indices + oh * g.out_width + ow;
      _mm512_mask_storeu_epi64(to, static_cast<__mmask8>(lanes & 0xFF),
                               _mm512_cvtepi32_epi64(_mm512_castsi512_si256(best_at)));
      _mm512_mask_storeu_epi64(to + 8, static_cast<__mmask8>(lanes >> 8),
                               _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(best_at, 1)));
    }
  }
}

EST_END_AVX512_KERNELS

// The same, eight outputs at a time, with AVX2's compare-and-blend for AVX-512's masks.
template <PoolColumns kColumns>
__attribute__((target("avx2,fma"))) void PoolPlane256(const float* in, float* out, int64_t* indices,
                                                      const PoolGeometry& g) {
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i lane_step = _mm256_mullo_epi32(iota, _mm256_set1_epi32(static_cast<int>(g.stride_w)));
  const __m256i minus_one = _mm256_set1_epi32(-1);
  const __m256i width = _mm256_set1_epi32(static_cast<int>(g.width));
  const __m256 lowest = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  alignas(32) int64_t best_index[8];
  for (int64_t oh = 0; oh < g.out_height; ++oh) {
    const int64_t top = oh * g.stride_h - g.pad_h;
    for (int64_t ow = 0; ow < g.out_width; ow += 8) {
      const int64_t count = std::min<int64_t>(8, g.out_width - ow);
      const __m256i lanes = detail::FirstLanes8(count);
      __m256 best = lowest;
      __m256i best_at = _mm256_setzero_si256();
      __m256i seen = _mm256_setzero_si256();
      for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
        const int64_t ih = top + kh * g.dilation_h;
        if (ih < 0 || ih >= g.height) continue;
        const float* row = in + ih * g.width;
        const __m256i row_start = _mm256_set1_epi32(static_cast<int>(ih * g.width));
        for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
          const int64_t first = ow * g.stride_w - g.pad_w + kw * g.dilation_w;
          const __m256i column = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(first)), lane_step);
          const __m256i inside = _mm256_and_si256(
              lanes, _mm256_and_si256(_mm256_cmpgt_epi32(column, minus_one), _mm256_cmpgt_epi32(width, column)));
          __m256 value;
          if constexpr (kColumns == PoolColumns::kContiguous)
            value = _mm256_maskload_ps(row + first, inside);  // a lane outside reads nothing
          else
            value = _mm256_mask_i32gather_ps(lowest, row, column, _mm256_castsi256_ps(inside), 4);
          const __m256 greater = _mm256_or_ps(_mm256_cmp_ps(value, best, _CMP_GT_OQ),
                                              _mm256_cmp_ps(value, value, _CMP_UNORD_Q));
          const __m256 take = _mm256_and_ps(_mm256_castsi256_ps(inside),
                                            _mm256_or_ps(greater, _mm256_castsi256_ps(_mm256_xor_si256(seen, minus_one))));
          best = _mm256_blendv_ps(best, value, take);
          best_at = _mm256_castps_si256(_mm256_blendv_ps(
              _mm256_castsi256_ps(best_at), _mm256_castsi256_ps(_mm256_add_epi32(row_start, column)), take));
          seen = _mm256_or_si256(seen, inside);
        }
      }
      const __m256i low = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(best_at));
      const __m256i high = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(best_at, 1));
      float* out_at = out + oh * g.out_width + ow;
      int64_t* index_at = indices + oh * g.out_width + ow;
      detail::StoreFirstLanes8(out_at, count, best);
      if (count == 8) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(index_at), low);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(index_at + 4), high);
      } else {  // the indices' tail goes through the stack
        _mm256_store_si256(reinterpret_cast<__m256i*>(best_index), low);
        _mm256_store_si256(reinterpret_cast<__m256i*>(best_index + 4), high);
        std::memcpy(index_at, best_index, sizeof(int64_t) * count);
      }
    }
  }
}
#endif

using PoolPlane = void (*)(const float* in, float* out, int64_t* indices, const PoolGeometry& g);

// The widest plane kernel for this CPU and this stride, or null where the CPU has neither
// AVX-512 nor AVX2.
PoolPlane PlaneKernel(const PoolGeometry& g) {
#if defined(__x86_64__)
  const int bits = detail::UsableVectorBits();
  if (bits >= 512) {
    if (g.stride_w == 1) return &PoolPlane512<PoolColumns::kContiguous>;
    if (g.stride_w == 2) return &PoolPlane512<PoolColumns::kEveryOther>;
  }
  if (bits >= 256) return g.stride_w == 1 ? &PoolPlane256<PoolColumns::kContiguous> : &PoolPlane256<PoolColumns::kGathered>;
#else
  (void)g;
#endif
  return nullptr;
}

}  // namespace

namespace detail {

bool MaxPool2dIsOurs(const at::Tensor& input, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                     at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode) {
  const std::optional<PoolGeometry> geometry = GeometryOf(input, kernel_size, stride, padding, dilation, ceil_mode);
  return geometry && PlaneKernel(*geometry);
}

}  // namespace detail

std::tuple<at::Tensor, at::Tensor> MaxPool2dWithIndices(const at::Tensor& input, at::IntArrayRef kernel_size,
                                                        at::IntArrayRef stride, at::IntArrayRef padding,
                                                        at::IntArrayRef dilation, bool ceil_mode) {
  const std::optional<PoolGeometry> geometry = GeometryOf(input, kernel_size, stride, padding, dilation, ceil_mode);
  const PoolPlane kernel = geometry ? PlaneKernel(*geometry) : nullptr;
  if (!kernel) return at::cpu::max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode);
  const PoolGeometry& g = *geometry;
  std::vector<int64_t> sizes = input.sizes().vec();
  sizes[sizes.size() - 2] = g.out_height;
  sizes[sizes.size() - 1] = g.out_width;
  at::Tensor output = at::empty(sizes, input.options());
  at::Tensor indices = at::empty(sizes, input.options().dtype(at::kLong));
  const float* in = input.data_ptr<float>();
  float* out = output.data_ptr<float>();
  int64_t* index = indices.data_ptr<int64_t>();
  const int64_t reads_per_plane = g.out_height * g.out_width * g.kernel_h * g.kernel_w;
  at::parallel_for(0, g.planes, detail::ParallelGrain(reads_per_plane, 1 << 16), [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane)
      kernel(in + plane * g.height * g.width, out + plane * g.out_height * g.out_width,
             index + plane * g.out_height * g.out_width, g);
  });
  return {output, indices};
}

}  // namespace est::kernels
