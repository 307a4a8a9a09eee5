#include "kernels/max_pool2d.h"

#include "kernels/cpu_vectors.h"
#include "kernels/max_pool2d_internal.h"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/max_pool2d_with_indices_cpu_dispatch.h>
#include <c10/util/accumulate.h>

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

using detail::PoolGeometry;
using detail::PoolPlane;
using detail::PoolWinners;
using detail::kWinnerFlows;

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

}  // namespace

namespace detail {

std::optional<PoolGeometry> PoolGeometryOf(at::IntArrayRef sizes, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                           at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode) {
  if (sizes.size() < 2) return std::nullopt;
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
  g.height = sizes[sizes.size() - 2];
  g.width = sizes[sizes.size() - 1];
  if (g.height < 1 || g.width < 1) return std::nullopt;
  g.planes = c10::multiply_integers(sizes.begin(), sizes.end() - 2);
  if (g.height * g.width > (int64_t{1} << 30) || g.width > kLimit) return std::nullopt;
  g.out_height = PooledSize(g.height, g.kernel_h, g.pad_h, g.stride_h, g.dilation_h, ceil_mode);
  g.out_width = PooledSize(g.width, g.kernel_w, g.pad_w, g.stride_w, g.dilation_w, ceil_mode);
  if (g.out_height < 1 || g.out_width < 1 || g.out_width > kLimit) return std::nullopt;
  if (!EveryWindowReadsInput(g.height, g.out_height, g.kernel_h, g.pad_h, g.stride_h, g.dilation_h) ||
      !EveryWindowReadsInput(g.width, g.out_width, g.kernel_w, g.pad_w, g.stride_w, g.dilation_w))
    return std::nullopt;
  return g;
}

}  // namespace detail

namespace {

// The geometry of a pooling these kernels compute, or nullopt for anything else (LibTorch's
// kernel then computes it, or raises its error).
std::optional<PoolGeometry> GeometryOf(const at::Tensor& input, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                       at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode) {
  if (!detail::IsContiguousFloatCpu(input) || input.suggest_memory_format() != at::MemoryFormat::Contiguous ||
      (input.dim() != 3 && input.dim() != 4) || input.numel() == 0)
    return std::nullopt;
  return detail::PoolGeometryOf(input.sizes(), kernel_size, stride, padding, dilation, ceil_mode);
}

// How a window's column is read: one load (stride 1), two loads and a shuffle (stride 2, with
// AVX-512), or a gather (any other stride; AVX2's, which on AMD's Zen 4 takes half the time of
// AVX-512's 16-lane gather).
enum class PoolColumns { kContiguous, kEveryOther, kGathered };

#if defined(__x86_64__)
EST_BEGIN_AVX512_KERNELS

// `count` (up to sixteen) windows whose columns all lie in the row, without the column checks
// (lanes past `count` read nothing and hold garbage), and with the
// chain from one window position to the next one compare and one blend long: a lane takes a
// value greater than its maximum or unordered with it (so a number after a NaN too), and the
// window's last NaN, tracked apart, takes its place at the end. Same result as LibTorch's rule.
template <PoolColumns kColumns, PoolWinners kWinners>
EST_TARGET_AVX512 inline __attribute__((always_inline)) void InteriorWindows512(const float* in,
                                                                                  const PoolGeometry& g, int64_t top,
                                                                                  int64_t ow, int64_t count,
                                                                                  __m512& best, __m512i& best_at) {
  const __m512i lane_step = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                               _mm512_set1_epi32(static_cast<int>(g.stride_w)));
  const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  // The columns read: first + lane (stride 1), or first + 0, 2, …, 2 (count - 1) in two halves.
  const __mmask16 lanes = detail::FirstLanes16(count);
  const __mmask16 low = detail::FirstLanes16(std::min<int64_t>(16, 2 * count - 1));
  const __mmask16 high = detail::FirstLanes16(std::max<int64_t>(0, 2 * count - 17));
  __m512 nan_value = best;
  __m512i nan_at = best_at;
  __mmask16 any_nan = 0;
  bool first_position = true;
  for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
    const int64_t ih = top + kh * g.dilation_h;
    if (ih < 0 || ih >= g.height) continue;
    const float* row = in + ih * g.width;
    for (int64_t kw = 0; kw < g.kernel_w; ++kw) {
      const int64_t first = ow * g.stride_w - g.pad_w + kw * g.dilation_w;  // lane 0's column
      __m512 value;
      if constexpr (kColumns == PoolColumns::kContiguous)
        value = _mm512_maskz_loadu_ps(lanes, row + first);
      else
        value = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(low, row + first), evens,
                                       _mm512_maskz_loadu_ps(high, row + first + 16));
      __m512i at = _mm512_setzero_si512();
      if constexpr (kWinners == PoolWinners::kIndices)
        at = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(ih * g.width + first)), lane_step);
      else if constexpr (kWinners == PoolWinners::kCodes)
        at = _mm512_set1_epi32(static_cast<int>(kh * g.kernel_w + kw));
      if (first_position) {
        best = value;
        best_at = at;
        first_position = false;
      } else {
        const __mmask16 take = _mm512_cmp_ps_mask(value, best, _CMP_NLE_UQ);
        best = _mm512_mask_mov_ps(best, take, value);
        best_at = _mm512_mask_mov_epi32(best_at, take, at);
      }
      const __mmask16 nan = _mm512_cmp_ps_mask(value, value, _CMP_UNORD_Q);
      nan_value = _mm512_mask_mov_ps(nan_value, nan, value);
      nan_at = _mm512_mask_mov_epi32(nan_at, nan, at);
      any_nan = _kor_mask16(any_nan, nan);
    }
  }
  best = _mm512_mask_mov_ps(best, any_nan, nan_value);
  best_at = _mm512_mask_mov_epi32(best_at, any_nan, nan_at);
}

// One (H, W) plane, sixteen outputs of a row at a time. A lane takes a window's value when it
// is the first the window reads, is greater than the lane's maximum, or is NaN: LibTorch's rule.
template <PoolColumns kColumns, PoolWinners kWinners>
EST_TARGET_AVX512 void PoolPlane512(const float* in, float* out, int64_t* indices, uint8_t* codes,
                                    const PoolGeometry& g) {
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
      // Windows whose columns all lie in the row need no column checks.
      const int64_t count = std::min<int64_t>(16, g.out_width - ow);
      const bool interior = ow * g.stride_w - g.pad_w >= 0 &&
                            (ow + count - 1) * g.stride_w - g.pad_w + (g.kernel_w - 1) * g.dilation_w < g.width;
      __m512 best = lowest;
      __m512i best_at = zero;  // kIndices: the flat position; kCodes: the position in the window
      __mmask16 seen = 0;
      if (interior) InteriorWindows512<kColumns, kWinners>(in, g, top, ow, count, best, best_at);
      for (int64_t kh = 0; kh < g.kernel_h && !interior; ++kh) {
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
          if constexpr (kWinners == PoolWinners::kIndices)
            best_at = _mm512_mask_mov_epi32(best_at, take, _mm512_add_epi32(row_start, column));
          else if constexpr (kWinners == PoolWinners::kCodes)
            best_at = _mm512_mask_mov_epi32(best_at, take, _mm512_set1_epi32(static_cast<int>(kh * g.kernel_w + kw)));
          seen = static_cast<__mmask16>(seen | inside);
        }
      }
      const int64_t at = oh * g.out_width + ow;
      _mm512_mask_storeu_ps(out + at, lanes, best);
      if constexpr (kWinners == PoolWinners::kIndices) {
        _mm512_mask_storeu_epi64(indices + at, static_cast<__mmask8>(lanes & 0xFF),
                                 _mm512_cvtepi32_epi64(_mm512_castsi512_si256(best_at)));
        _mm512_mask_storeu_epi64(indices + at + 8, static_cast<__mmask8>(lanes >> 8),
                                 _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(best_at, 1)));
      } else if constexpr (kWinners == PoolWinners::kCodes) {
        const __mmask16 flows = static_cast<__mmask16>(~_mm512_cmp_ps_mask(best, _mm512_setzero_ps(), _CMP_LE_OQ));
        const __m512i code = _mm512_mask_or_epi32(best_at, flows, best_at, _mm512_set1_epi32(detail::kWinnerFlows));
        _mm512_mask_cvtepi32_storeu_epi8(codes + at, lanes, code);
      }
    }
  }
}

EST_END_AVX512_KERNELS

// The same, eight outputs at a time, with AVX2's compare-and-blend for AVX-512's masks.
template <PoolColumns kColumns, PoolWinners kWinners>
__attribute__((target("avx2,fma"))) void PoolPlane256(const float* in, float* out, int64_t* indices, uint8_t* codes,
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
      // Windows whose columns all lie in the row need no column checks; with stride 2 their
      // columns come from two loads (of the 2 count - 1 columns they span) and two shuffles.
      const bool interior = ow * g.stride_w - g.pad_w >= 0 &&
                            (ow + count - 1) * g.stride_w - g.pad_w + (g.kernel_w - 1) * g.dilation_w < g.width;
      const __m256i low_half = detail::FirstLanes8(std::min<int64_t>(8, 2 * count - 1));
      const __m256i high_half = detail::FirstLanes8(2 * count - 9);
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
          const __m256i inside =
              interior ? lanes
                       : _mm256_and_si256(lanes, _mm256_and_si256(_mm256_cmpgt_epi32(column, minus_one),
                                                                  _mm256_cmpgt_epi32(width, column)));
          __m256 value;
          if constexpr (kColumns == PoolColumns::kContiguous) {
            // A lane outside reads nothing.
            value = interior && count == 8 ? _mm256_loadu_ps(row + first) : _mm256_maskload_ps(row + first, inside);
          } else if (interior && g.stride_w == 2) {  // columns first + 0, 2, …, 2 (count - 1)
            const __m256 low = _mm256_maskload_ps(row + first, low_half);
            const __m256 high = _mm256_maskload_ps(row + first + 8, high_half);
            const __m256 evens = _mm256_shuffle_ps(low, high, _MM_SHUFFLE(2, 0, 2, 0));
            value = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(evens), _MM_SHUFFLE(3, 1, 2, 0)));
          } else {
            value = _mm256_mask_i32gather_ps(lowest, row, column, _mm256_castsi256_ps(inside), 4);
          }
          const __m256 greater = _mm256_or_ps(_mm256_cmp_ps(value, best, _CMP_GT_OQ),
                                              _mm256_cmp_ps(value, value, _CMP_UNORD_Q));
          const __m256 take = _mm256_and_ps(_mm256_castsi256_ps(inside),
                                            _mm256_or_ps(greater, _mm256_castsi256_ps(_mm256_xor_si256(seen, minus_one))));
          best = _mm256_blendv_ps(best, value, take);
          if constexpr (kWinners != PoolWinners::kNone) {
            const __m256i at = kWinners == PoolWinners::kIndices
                                   ? _mm256_add_epi32(row_start, column)
                                   : _mm256_set1_epi32(static_cast<int>(kh * g.kernel_w + kw));
            best_at = _mm256_castps_si256(
                _mm256_blendv_ps(_mm256_castsi256_ps(best_at), _mm256_castsi256_ps(at), take));
          }
          seen = _mm256_or_si256(seen, inside);
        }
      }
      detail::StoreFirstLanes8(out + oh * g.out_width + ow, count, best);
      if constexpr (kWinners == PoolWinners::kCodes) {
        const __m256 stops = _mm256_cmp_ps(best, _mm256_setzero_ps(), _CMP_LE_OQ);
        const __m256i code = _mm256_or_si256(
            best_at, _mm256_andnot_si256(_mm256_castps_si256(stops), _mm256_set1_epi32(detail::kWinnerFlows)));
        alignas(32) int32_t lane_code[8];
        _mm256_store_si256(reinterpret_cast<__m256i*>(lane_code), code);
        for (int64_t j = 0; j < count; ++j) codes[oh * g.out_width + ow + j] = static_cast<uint8_t>(lane_code[j]);
      }
      if constexpr (kWinners == PoolWinners::kIndices) {
        const __m256i low = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(best_at));
        const __m256i high = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(best_at, 1));
        int64_t* index_at = indices + oh * g.out_width + ow;
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
}
#endif

// The widest plane kernel for this CPU, this stride and these winners, or null where the CPU
// has neither AVX-512 nor AVX2.
template <PoolWinners kWinners>
PoolPlane PlaneKernel(const PoolGeometry& g) {
#if defined(__x86_64__)
  const int bits = detail::UsableVectorBits();
  if (bits >= 512) {
    if (g.stride_w == 1) return &PoolPlane512<PoolColumns::kContiguous, kWinners>;
    if (g.stride_w == 2) return &PoolPlane512<PoolColumns::kEveryOther, kWinners>;
  }
  if (bits >= 256)
    return g.stride_w == 1 ? &PoolPlane256<PoolColumns::kContiguous, kWinners>
                           : &PoolPlane256<PoolColumns::kGathered, kWinners>;
#else
  (void)g;
#endif
  return nullptr;
}

}  // namespace

namespace detail {

std::optional<MaxPool2dPlan> PlanMaxPool2d(const at::Tensor& input, at::IntArrayRef kernel_size,
                                           at::IntArrayRef stride, at::IntArrayRef padding,
                                           at::IntArrayRef dilation, bool ceil_mode) {
  const std::optional<PoolGeometry> geometry = GeometryOf(input, kernel_size, stride, padding, dilation, ceil_mode);
  if (!geometry || !PlaneKernel<PoolWinners::kIndices>(*geometry)) return std::nullopt;
  const bool codes_fit = geometry->kernel_h * geometry->kernel_w <= kWinnerFlows;
  return MaxPool2dPlan{*geometry, PlaneKernel<PoolWinners::kNone>(*geometry),
                       PlaneKernel<PoolWinners::kIndices>(*geometry),
                       codes_fit ? PlaneKernel<PoolWinners::kCodes>(*geometry) : nullptr};
}

at::Tensor EmptyPooled(const at::Tensor& input, const PoolGeometry& g, at::ScalarType dtype) {
  std::vector<int64_t> sizes = input.sizes().vec();
  sizes[sizes.size() - 2] = g.out_height;
  sizes[sizes.size() - 1] = g.out_width;
  return at::empty(sizes, input.options().dtype(dtype));
}

void PoolPlanes(const MaxPool2dPlan& plan, PoolWinners winners, const float* in, float* out, void* winners_out) {
  const PoolGeometry& g = plan.geometry;
  const PoolPlane kernel = winners == PoolWinners::kIndices ? plan.with_indices
                           : winners == PoolWinners::kCodes ? plan.with_codes
                                                            : plan.values_only;
  TORCH_INTERNAL_ASSERT(kernel, "no plane kernel writes these winners");
  const int64_t in_plane = g.height * g.width, out_plane = g.out_height * g.out_width;
  const int64_t reads_per_plane = out_plane * g.kernel_h * g.kernel_w;
  at::parallel_for(0, g.planes, ParallelGrain(reads_per_plane, 1 << 16), [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t at = plane * out_plane;
      int64_t* indices = winners == PoolWinners::kIndices ? static_cast<int64_t*>(winners_out) + at : nullptr;
      uint8_t* codes = winners == PoolWinners::kCodes ? static_cast<uint8_t*>(winners_out) + at : nullptr;
      kernel(in + plane * in_plane, out + plane * out_plane, indices, codes, g);
    }
  });
}

}  // namespace detail

std::tuple<at::Tensor, at::Tensor> MaxPool2dWithIndices(const at::Tensor& input, at::IntArrayRef kernel_size,
                                                        at::IntArrayRef stride, at::IntArrayRef padding,
                                                        at::IntArrayRef dilation, bool ceil_mode) {
  const std::optional<detail::MaxPool2dPlan> plan =
      detail::PlanMaxPool2d(input, kernel_size, stride, padding, dilation, ceil_mode);
  if (!plan) return at::cpu::max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode);
  at::Tensor output = detail::EmptyPooled(input, plan->geometry, at::kFloat);
  at::Tensor indices = detail::EmptyPooled(input, plan->geometry, at::kLong);
  detail::PoolPlanes(*plan, detail::PoolWinners::kIndices, input.data_ptr<float>(), output.data_ptr<float>(),
                     indices.data_ptr<int64_t>());
  return {output, indices};
}

}  // namespace est::kernels
