// The input gradient of a max-pool from its winners' codes (PoolWinners::kCodes), with relu's
// backward folded in where asked: MaxPool2dAutograd's backward.

#include "kernels/cpu_vectors.h"
#include "kernels/max_pool2d_internal.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace est::kernels::detail {
namespace {

// Which window reads each position along one dimension and where in the window it sits (-1 and
// -1 where none does, and for 16 positions past the end, so that vectors read them unmasked),
// for windows that do not overlap; and the first of sixteen consecutive windows that hold those
// of the positions from here on (the window of the position, or the last window).
struct Cover {
  std::vector<int32_t> window, position, first_window;
};

Cover CoverOf(int64_t size, int64_t pooled, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation) {
  const auto n = static_cast<size_t>(size) + 16;
  Cover cover{std::vector<int32_t>(n, -1), std::vector<int32_t>(n, -1), std::vector<int32_t>(n, 0)};
  for (int64_t i = 0; i < size; ++i) {
    const int64_t window = (i + pad) / stride, offset = (i + pad) % stride;
    const auto at = static_cast<size_t>(i);
    cover.first_window[at] = static_cast<int32_t>(std::min(window, pooled - 1));
    if (window < pooled && offset % dilation == 0 && offset / dilation < kernel) {
      cover.window[at] = static_cast<int32_t>(window);
      cover.position[at] = static_cast<int32_t>(offset / dilation);
    }
  }
  return cover;
}

// The input rows of one output row's windows where the windows do not overlap: each column of
// kernel row k (`rows[k]`, null where the row lies in the padding) takes its window's gradient
// (plus zero, as LibTorch's zero fill and sum give) where the window's winner is that column
// in that kernel row and relu's backward lets it through; 0 elsewhere.
struct RowArgs {
  const uint8_t* codes;                            // the output row's winners
  const float* grad;                               // the output row's gradient
  const int32_t *window, *position, *first_window;  // the columns' Cover
  int64_t width, out_width, kernel_w;
  float* const* rows;  // kernel_h of them
  int64_t kernel_h;
  bool relu;
};

using GradRows = void (*)(const RowArgs& a);

#if defined(__x86_64__)
EST_BEGIN_AVX512_KERNELS

// Sixteen columns at a time: their windows lie within sixteen consecutive outputs, fetched once
// and spread over the columns by a permute, then compared with each kernel row's positions.
EST_TARGET_AVX512 void GradRows512(const RowArgs& args) {
  const RowArgs a = args;  // in registers, not reloaded after each store
  const __m512i zero = _mm512_setzero_si512();
  const __m512i position_bits = _mm512_set1_epi32(kWinnerFlows - 1), flows = _mm512_set1_epi32(kWinnerFlows);
  for (int64_t iw = 0; iw < a.width; iw += 16) {
    const __mmask16 lanes = FirstLanes16(a.width - iw);
    const __m512i window = _mm512_mask_loadu_epi32(_mm512_set1_epi32(-1), lanes, a.window + iw);
    const __m512i position = _mm512_maskz_loadu_epi32(lanes, a.position + iw);
    // Sixteen windows from `base` hold those of these columns; a row of sixteen or more fetches a
    // whole sixteen.
    const int64_t base = std::min<int64_t>(a.first_window[iw], std::max<int64_t>(0, a.out_width - 16));
    const __mmask16 fetched = FirstLanes16(a.out_width - base);
    const __m512i codes = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(fetched, a.codes + base));
    const __m512 grads = _mm512_maskz_loadu_ps(fetched, a.grad + base);
    const __m512i from = _mm512_sub_epi32(window, _mm512_set1_epi32(static_cast<int>(base)));
    const __m512i code = _mm512_permutexvar_epi32(from, codes);
    const __m512 grad = _mm512_add_ps(_mm512_permutexvar_ps(from, grads), _mm512_setzero_ps());
    __mmask16 flowing = _mm512_cmpge_epi32_mask(window, zero);
    if (a.relu) flowing &= _mm512_test_epi32_mask(code, flows);
    // The winner's kernel row, times the kernel's width, where this column's position is its column.
    const __m512i winner_row = _mm512_sub_epi32(_mm512_and_si512(code, position_bits), position);
    for (int64_t kh = 0; kh < a.kernel_h; ++kh) {
      if (!a.rows[kh]) continue;
      const __mmask16 hit =
          flowing & _mm512_cmpeq_epi32_mask(winner_row, _mm512_set1_epi32(static_cast<int>(kh * a.kernel_w)));
      _mm512_mask_storeu_ps(a.rows[kh] + iw, lanes, _mm512_maskz_mov_ps(hit, grad));
    }
  }
}

EST_END_AVX512_KERNELS

// The same, eight columns at a time.
__attribute__((target("avx2,fma"))) void GradRows256(const RowArgs& args) {
  const RowArgs a = args;  // in registers, not reloaded after each store
  const __m256i position_bits = _mm256_set1_epi32(kWinnerFlows - 1), flows = _mm256_set1_epi32(kWinnerFlows);
  const __m256i minus_one = _mm256_set1_epi32(-1), zero = _mm256_setzero_si256();
  alignas(32) float tail[8];
  for (int64_t iw = 0; iw < a.width; iw += 8) {
    const int64_t count = std::min<int64_t>(8, a.width - iw);
    const __m256i window = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.window + iw));
    const __m256i position = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.position + iw));
    // Eight windows from `base` hold those of these columns; a row of eight or more fetches a whole
    // eight (AMD's masked moves are slow).
    const int64_t base = std::min<int64_t>(a.first_window[iw], std::max<int64_t>(0, a.out_width - 8));
    const int64_t fetched = std::min<int64_t>(8, a.out_width - base);
    uint64_t code_bytes = 0;
    __m256 grads;
    if (fetched == 8) {
      std::memcpy(&code_bytes, a.codes + base, 8);
      grads = _mm256_loadu_ps(a.grad + base);
    } else {
      std::memcpy(&code_bytes, a.codes + base, static_cast<size_t>(fetched));
      grads = _mm256_maskload_ps(a.grad + base, FirstLanes8(fetched));
    }
    const __m256i codes = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(code_bytes)));
    const __m256i from = _mm256_sub_epi32(window, _mm256_set1_epi32(static_cast<int>(base)));
    const __m256i code = _mm256_permutevar8x32_epi32(codes, from);
    const __m256 grad = _mm256_add_ps(_mm256_permutevar8x32_ps(grads, from), _mm256_setzero_ps());
    __m256i flowing = _mm256_cmpgt_epi32(window, minus_one);
    if (a.relu) flowing = _mm256_andnot_si256(_mm256_cmpeq_epi32(_mm256_and_si256(code, flows), zero), flowing);
    const __m256i winner_row = _mm256_sub_epi32(_mm256_and_si256(code, position_bits), position);
    for (int64_t kh = 0; kh < a.kernel_h; ++kh) {
      if (!a.rows[kh]) continue;
      const __m256i hit = _mm256_and_si256(
          flowing, _mm256_cmpeq_epi32(winner_row, _mm256_set1_epi32(static_cast<int>(kh * a.kernel_w))));
      const __m256 value = _mm256_and_ps(_mm256_castsi256_ps(hit), grad);
      if (count == 8) {
        _mm256_storeu_ps(a.rows[kh] + iw, value);
      } else {  // AMD's masked store is slow
        _mm256_store_ps(tail, value);
        std::copy(tail, tail + count, a.rows[kh] + iw);
      }
    }
  }
}
#endif

// The rows kernel for this CPU, or null where it has neither AVX-512 nor AVX2.
GradRows RowsKernel() {
#if defined(__x86_64__)
  const int bits = UsableVectorBits();
  if (bits >= 512) return &GradRows512;
  if (bits >= 256) return &GradRows256;
#endif
  return nullptr;
}

// One plane where the windows do not overlap: the rows no window reads are zeros, the others
// are written output row by output row.
void PlaneByRows(const PoolGeometry& g, const Cover& rows, RowArgs args, GradRows kernel, const uint8_t* codes,
                 const float* grad_output, float* grad_input, std::vector<float*>& kernel_rows) {
  for (int64_t ih = 0; ih < g.height; ++ih)
    if (rows.window[static_cast<size_t>(ih)] < 0)
      std::fill(grad_input + ih * g.width, grad_input + (ih + 1) * g.width, 0.f);
  args.rows = kernel_rows.data();
  for (int64_t oh = 0; oh < g.out_height; ++oh) {
    for (int64_t kh = 0; kh < g.kernel_h; ++kh) {
      const int64_t ih = oh * g.stride_h - g.pad_h + kh * g.dilation_h;
      kernel_rows[static_cast<size_t>(kh)] = ih >= 0 && ih < g.height ? grad_input + ih * g.width : nullptr;
    }
    args.codes = codes + oh * g.out_width;
    args.grad = grad_output + oh * g.out_width;
    kernel(args);
  }
}

// One plane of any windows: zeros, then each window's gradient added at its winner in LibTorch's
// order (output by output).
void PlaneByWindows(const PoolGeometry& g, const std::vector<int64_t>& offset, bool relu, const uint8_t* code,
                    const float* gy, float* gx) {
  std::fill(gx, gx + g.height * g.width, 0.f);
  for (int64_t oh = 0; oh < g.out_height; ++oh) {
    const int64_t corner = (oh * g.stride_h - g.pad_h) * g.width - g.pad_w;
    for (int64_t ow = 0; ow < g.out_width; ++ow) {
      const int64_t o = oh * g.out_width + ow;
      if (relu && !(code[o] & kWinnerFlows)) continue;
      gx[corner + ow * g.stride_w + offset[code[o] & (kWinnerFlows - 1)]] += gy[o];
    }
  }
}

}  // namespace

void PoolBackwardPlanes(const PoolGeometry& g, const uint8_t* codes, const float* grad_output, float* grad_input,
                        bool relu) {
  const int64_t in_plane = g.height * g.width, out_plane = g.out_height * g.out_width;
  const bool overlap =
      g.stride_h < (g.kernel_h - 1) * g.dilation_h + 1 || g.stride_w < (g.kernel_w - 1) * g.dilation_w + 1;
  const GradRows kernel = overlap ? nullptr : RowsKernel();
  const Cover rows = CoverOf(g.height, g.out_height, g.kernel_h, g.pad_h, g.stride_h, g.dilation_h);
  const Cover columns = CoverOf(g.width, g.out_width, g.kernel_w, g.pad_w, g.stride_w, g.dilation_w);
  const RowArgs args{nullptr, nullptr, columns.window.data(), columns.position.data(), columns.first_window.data(),
                     g.width, g.out_width, g.kernel_w, nullptr, g.kernel_h, relu};
  // A window position's offset from the window's corner, for windows that overlap.
  std::vector<int64_t> offset(kernel ? 0 : static_cast<size_t>(g.kernel_h * g.kernel_w));
  for (int64_t kh = 0; kh < g.kernel_h && !kernel; ++kh)
    for (int64_t kw = 0; kw < g.kernel_w; ++kw)
      offset[static_cast<size_t>(kh * g.kernel_w + kw)] = kh * g.dilation_h * g.width + kw * g.dilation_w;
  at::parallel_for(0, g.planes, ParallelGrain(out_plane + in_plane, 1 << 16), [&](int64_t begin, int64_t end) {
    std::vector<float*> kernel_rows(static_cast<size_t>(g.kernel_h));
    for (int64_t plane = begin; plane < end; ++plane) {
      const uint8_t* code = codes + plane * out_plane;
      const float* gy = grad_output + plane * out_plane;
      float* gx = grad_input + plane * in_plane;
      if (kernel)
        PlaneByRows(g, rows, args, kernel, code, gy, gx, kernel_rows);
      else
        PlaneByWindows(g, offset, relu, code, gy, gx);
    }
  });
}

}  // namespace est::kernels::detail
