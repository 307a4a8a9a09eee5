#include "kernels/relu_max_pool.h"

#include "kernels/cpu_vectors.h"
#include "kernels/relu_max_pool_internal.h"

#include <ATen/Parallel.h>
#include <torch/autograd.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace est::kernels {
namespace {

// A window's winner as one byte: bits 0-1 its position (top-left, top-right, bottom-left,
// bottom-right), bit 2 set when the gradient flows (relu's input there is positive or NaN).
constexpr uint8_t kFlows = 4;

// The geometry of one [H, W] plane and its pooled [H/2, W/2] plane.
struct Plane {
  int64_t height, width;
  int64_t out_height() const { return height / 2; }
  int64_t out_width() const { return width / 2; }
};

// relu(v), keeping a NaN, as LibTorch's relu does.
inline float Relu(float v) { return v > 0.f || std::isnan(v) ? v : 0.f; }

// The windows of one output row, one at a time: the path for CPUs without AVX2.
void ForwardWindows(const float* top, const float* bottom, float* out, uint8_t* code, int64_t windows) {
  for (int64_t j = 0; j < windows; ++j) {
    const float v[4] = {top[2 * j], top[2 * j + 1], bottom[2 * j], bottom[2 * j + 1]};
    float best = Relu(v[0]), source = v[0];
    uint8_t at = 0;
    for (uint8_t k = 1; k < 4; ++k) {
      const float r = Relu(v[k]);
      const bool take = r > best || std::isnan(r);
      best = take ? r : best;
      source = take ? v[k] : source;
      at = take ? k : at;
    }
    out[j] = best;
    code[j] = static_cast<uint8_t>(at | (source <= 0.f ? 0 : kFlows));
  }
}

void BackwardWindows(const float* grad, const uint8_t* code, float* top, float* bottom, int64_t windows) {
  for (int64_t j = 0; j < windows; ++j) {
    const float g = (code[j] & kFlows) ? grad[j] : 0.f;
    const int at = code[j] & 3;
    top[2 * j] = at == 0 ? g : 0.f;
    top[2 * j + 1] = at == 1 ? g : 0.f;
    bottom[2 * j] = at == 2 ? g : 0.f;
    bottom[2 * j + 1] = at == 3 ? g : 0.f;
  }
}

#if defined(__x86_64__)
using detail::FirstLanes8;
using detail::StoreFirstLanes8;

// All windows of one output row, eight at a time; the last (partial) group reads and writes
// through masks, so no window takes a scalar path with branches on the data. The even/odd
// split of two rows' 16 values leaves the windows in the order 0 1 4 5 2 3 6 7, which one
// 64-bit permute puts back.
__attribute__((target("avx2"))) void ForwardAvx2(const float* top, const float* bottom, float* out, uint8_t* code,
                                                 int64_t windows) {
  const __m256 zero = _mm256_setzero_ps();
  const __m256 flows = _mm256_set1_ps(kFlows);
  for (int64_t j = 0; j < windows; j += 8) {
    const int64_t count = std::min<int64_t>(8, windows - j);
    const __m256i low = FirstLanes8(2 * count), high = FirstLanes8(2 * count - 8);
    const __m256 t0 = _mm256_maskload_ps(top + 2 * j, low), t1 = _mm256_maskload_ps(top + 2 * j + 8, high);
    const __m256 b0 = _mm256_maskload_ps(bottom + 2 * j, low), b1 = _mm256_maskload_ps(bottom + 2 * j + 8, high);
    const __m256 v[4] = {_mm256_shuffle_ps(t0, t1, 0x88), _mm256_shuffle_ps(t0, t1, 0xdd),
                         _mm256_shuffle_ps(b0, b1, 0x88), _mm256_shuffle_ps(b0, b1, 0xdd)};
    // max(0, v) returns v when v is NaN, as Relu does.
    __m256 best = _mm256_max_ps(zero, v[0]), source = v[0], at = zero;
    for (int k = 1; k < 4; ++k) {
      const __m256 r = _mm256_max_ps(zero, v[k]);
      const __m256 take = _mm256_or_ps(_mm256_cmp_ps(r, best, _CMP_GT_OQ), _mm256_cmp_ps(r, r, _CMP_UNORD_Q));
      best = _mm256_blendv_ps(best, r, take);
      source = _mm256_blendv_ps(source, v[k], take);
      at = _mm256_blendv_ps(at, _mm256_set1_ps(static_cast<float>(k)), take);
    }
    const __m256 flow = _mm256_and_ps(_mm256_cmp_ps(source, zero, _CMP_NLE_UQ), flows);
    const __m256 ordered = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(best), 0xd8));
    StoreFirstLanes8(out + j, count, ordered);
    const __m256i codes = _mm256_permute4x64_epi64(_mm256_cvttps_epi32(_mm256_add_ps(at, flow)), 0xd8);
    alignas(32) int32_t lanes[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), codes);
    for (int64_t k = 0; k < count; ++k) code[j + k] = static_cast<uint8_t>(lanes[k]);
  }
}

// The gradient of eight windows at a time: each window's four input places get the gradient
// or zero, interleaved back into the two input rows; the last group through masks.
__attribute__((target("avx2"))) void BackwardAvx2(const float* grad, const uint8_t* code, float* top, float* bottom,
                                                  int64_t windows) {
  for (int64_t j = 0; j < windows; j += 8) {
    const int64_t count = std::min<int64_t>(8, windows - j);
    uint64_t group = 0;  // the group's codes, read without passing the end of the row's
    std::memcpy(&group, code + j, static_cast<size_t>(count));
    const __m256i c = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(group)));
    const __m256i position = _mm256_and_si256(c, _mm256_set1_epi32(3));
    const __m256 flows = _mm256_castsi256_ps(
        _mm256_cmpeq_epi32(_mm256_and_si256(c, _mm256_set1_epi32(kFlows)), _mm256_set1_epi32(kFlows)));
    const __m256 g = _mm256_and_ps(_mm256_maskload_ps(grad + j, FirstLanes8(count)), flows);
    __m256 at[4];
    for (int k = 0; k < 4; ++k)
      at[k] = _mm256_and_ps(g, _mm256_castsi256_ps(_mm256_cmpeq_epi32(position, _mm256_set1_epi32(k))));
    // unpack gives windows (0 1 | 4 5) and (2 3 | 6 7); the 128-bit permutes put them in order.
    const __m256 top_low = _mm256_unpacklo_ps(at[0], at[1]), top_high = _mm256_unpackhi_ps(at[0], at[1]);
    const __m256 bottom_low = _mm256_unpacklo_ps(at[2], at[3]), bottom_high = _mm256_unpackhi_ps(at[2], at[3]);
    StoreFirstLanes8(top + 2 * j, 2 * count, _mm256_permute2f128_ps(top_low, top_high, 0x20));
    StoreFirstLanes8(top + 2 * j + 8, 2 * count - 8, _mm256_permute2f128_ps(top_low, top_high, 0x31));
    StoreFirstLanes8(bottom + 2 * j, 2 * count, _mm256_permute2f128_ps(bottom_low, bottom_high, 0x20));
    StoreFirstLanes8(bottom + 2 * j + 8, 2 * count - 8, _mm256_permute2f128_ps(bottom_low, bottom_high, 0x31));
  }
}

EST_BEGIN_AVX512_KERNELS

using detail::FirstLanes16;

// Stores the `lanes` of `values`: a plain store where that is all sixteen.
EST_TARGET_AVX512 inline void Store16(float* to, __mmask16 lanes, __m512 values) {
  if (lanes == 0xffff)
    _mm512_storeu_ps(to, values);
  else
    _mm512_mask_storeu_ps(to, lanes, values);
}

// ForwardAvx2 sixteen windows at a time, its masks AVX-512's own: one 13-window row of the
// 26-wide Fashion-MNIST activations is one step instead of two.
EST_TARGET_AVX512 void ForwardAvx512(const float* top, const float* bottom, float* out, uint8_t* code,
                                     int64_t windows) {
  const __m512 zero = _mm512_setzero_ps();
  // Indexes into the 32 values of two vectors: the even ones (each window's left), the odd ones.
  const __m512i left = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i right = _mm512_add_epi32(left, _mm512_set1_epi32(1));
  for (int64_t j = 0; j < windows; j += 16) {
    const int64_t count = std::min<int64_t>(16, windows - j);
    const __mmask16 low = FirstLanes16(2 * count), high = FirstLanes16(2 * count - 16);
    const __m512 t0 = _mm512_maskz_loadu_ps(low, top + 2 * j), t1 = _mm512_maskz_loadu_ps(high, top + 2 * j + 16);
    const __m512 b0 = _mm512_maskz_loadu_ps(low, bottom + 2 * j);
    const __m512 b1 = _mm512_maskz_loadu_ps(high, bottom + 2 * j + 16);
    const __m512 v[4] = {_mm512_permutex2var_ps(t0, left, t1), _mm512_permutex2var_ps(t0, right, t1),
                         _mm512_permutex2var_ps(b0, left, b1), _mm512_permutex2var_ps(b0, right, b1)};
    // max(0, v) returns v when v is NaN, as Relu does.
    __m512 best = _mm512_max_ps(zero, v[0]), source = v[0];
    __m512i at = _mm512_setzero_si512();
    for (int k = 1; k < 4; ++k) {
      const __m512 r = _mm512_max_ps(zero, v[k]);
      const __mmask16 take = _mm512_cmp_ps_mask(r, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q);
      best = _mm512_mask_blend_ps(take, best, r);
      source = _mm512_mask_blend_ps(take, source, v[k]);
      at = _mm512_mask_blend_epi32(take, at, _mm512_set1_epi32(k));
    }
    const __mmask16 flows = _mm512_cmp_ps_mask(source, zero, _CMP_NLE_UQ);
    at = _mm512_mask_or_epi32(at, flows, at, _mm512_set1_epi32(kFlows));
    const __mmask16 lanes = FirstLanes16(count);
    Store16(out + j, lanes, best);
    _mm512_mask_cvtepi32_storeu_epi8(code + j, lanes, at);
  }
}

// BackwardAvx2 sixteen windows at a time.
EST_TARGET_AVX512 void BackwardAvx512(const float* grad, const uint8_t* code, float* top, float* bottom,
                                      int64_t windows) {
  // Indexes that interleave two vectors' first (then last) eight lanes: a0 b0 a1 b1 ...
  const __m512i first = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i last = _mm512_add_epi32(first, _mm512_set1_epi32(8));
  for (int64_t j = 0; j < windows; j += 16) {
    const int64_t count = std::min<int64_t>(16, windows - j);
    const __mmask16 lanes = FirstLanes16(count);
    const __m512i c = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(lanes, code + j));
    const __m512i position = _mm512_and_si512(c, _mm512_set1_epi32(3));
    const __mmask16 flows = _mm512_test_epi32_mask(c, _mm512_set1_epi32(kFlows));
    const __m512 g = _mm512_maskz_loadu_ps(lanes & flows, grad + j);
    __m512 at[4];
    for (int k = 0; k < 4; ++k) at[k] = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(position, _mm512_set1_epi32(k)), g);
    const __mmask16 low = FirstLanes16(2 * count), high = FirstLanes16(2 * count - 16);
    Store16(top + 2 * j, low, _mm512_permutex2var_ps(at[0], first, at[1]));
    Store16(top + 2 * j + 16, high, _mm512_permutex2var_ps(at[0], last, at[1]));
    Store16(bottom + 2 * j, low, _mm512_permutex2var_ps(at[2], first, at[3]));
    Store16(bottom + 2 * j + 16, high, _mm512_permutex2var_ps(at[2], last, at[3]));
  }
}
EST_END_AVX512_KERNELS
#endif

// The row kernels to use: the widest this CPU has that the tests allow.
struct RowKernels {
  void (*forward)(const float* top, const float* bottom, float* out, uint8_t* code, int64_t windows);
  void (*backward)(const float* grad, const uint8_t* code, float* top, float* bottom, int64_t windows);
};
RowKernels Kernels() {
#if defined(__x86_64__)
  const int bits = detail::UsableVectorBits();
  if (bits >= 512) return {ForwardAvx512, BackwardAvx512};
  if (bits >= 256) return {ForwardAvx2, BackwardAvx2};
#endif
  return {ForwardWindows, BackwardWindows};
}

void ForwardPlanes(const float* input, float* output, uint8_t* code, Plane plane, int64_t begin, int64_t end) {
  const int64_t out_h = plane.out_height(), out_w = plane.out_width();
  const RowKernels kernels = Kernels();
  for (int64_t p = begin; p < end; ++p) {
    for (int64_t i = 0; i < out_h; ++i) {
      const float* top = input + (p * plane.height + 2 * i) * plane.width;
      float* out = output + (p * out_h + i) * out_w;
      uint8_t* codes = code + (p * out_h + i) * out_w;
      kernels.forward(top, top + plane.width, out, codes, out_w);
    }
  }
}

// Every input place is written: the winners' gradients, zeros elsewhere, and zeros in the
// last row and column that an odd height or width leaves outside every window.
void BackwardPlanes(const float* grad, const uint8_t* code, float* grad_input, Plane plane, int64_t begin,
                    int64_t end) {
  const int64_t out_h = plane.out_height(), out_w = plane.out_width();
  const RowKernels kernels = Kernels();
  for (int64_t p = begin; p < end; ++p) {
    float* input_plane = grad_input + p * plane.height * plane.width;
    for (int64_t i = 0; i < out_h; ++i) {
      float* top = input_plane + 2 * i * plane.width;
      float* bottom = top + plane.width;
      const float* g = grad + (p * out_h + i) * out_w;
      const uint8_t* codes = code + (p * out_h + i) * out_w;
      kernels.backward(g, codes, top, bottom, out_w);
      if (plane.width % 2 != 0) top[plane.width - 1] = bottom[plane.width - 1] = 0.f;
    }
    if (plane.height % 2 != 0)
      std::fill(input_plane + (plane.height - 1) * plane.width, input_plane + plane.height * plane.width, 0.f);
  }
}

// Planes per parallel task: enough work to be worth a hand-off.
int64_t Grain(Plane plane) { return detail::ParallelGrain(plane.height * plane.width, 32768); }

struct ReluMaxPool2x2Function : torch::autograd::Function<ReluMaxPool2x2Function> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input) {
    const Plane plane{input.size(2), input.size(3)};
    const int64_t planes = input.size(0) * input.size(1);
    auto output = at::empty({input.size(0), input.size(1), plane.out_height(), plane.out_width()}, input.options());
    auto code = at::empty(output.sizes(), input.options().dtype(at::kByte));
    const float* in = input.data_ptr<float>();
    float* out = output.data_ptr<float>();
    uint8_t* codes = code.data_ptr<uint8_t>();
    at::parallel_for(0, planes, Grain(plane),
                     [&](int64_t begin, int64_t end) { ForwardPlanes(in, out, codes, plane, begin, end); });
    ctx->save_for_backward({code});
    ctx->saved_data["height"] = plane.height;
    ctx->saved_data["width"] = plane.width;
    return output;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    TORCH_CHECK(!at::GradMode::is_enabled(), "ReluMaxPool2x2's gradient cannot be differentiated again");
    return {detail::ReluMaxPool2x2Backward(grads[0], ctx->get_saved_variables()[0], ctx->saved_data["height"].toInt(),
                                           ctx->saved_data["width"].toInt())};
  }
};

bool HasFastPath(const at::Tensor& input) {
  return !detail::InJitTrace() && input.device().is_cpu() && input.scalar_type() == at::kFloat && input.dim() == 4 &&
         input.is_contiguous() && input.size(2) >= 2 && input.size(3) >= 2 && input.numel() > 0;
}

}  // namespace

namespace detail {

ReluMaxPoolForwardRow ReluMaxPoolForwardRowKernel() { return Kernels().forward; }

at::Tensor ReluMaxPool2x2Backward(const at::Tensor& grad, const at::Tensor& code, int64_t height, int64_t width) {
  const Plane plane{height, width};
  const at::Tensor contiguous = grad.contiguous();
  const int64_t planes = code.size(0) * code.size(1);
  auto grad_input = at::empty({code.size(0), code.size(1), plane.height, plane.width}, contiguous.options());
  const float* g = contiguous.data_ptr<float>();
  const uint8_t* codes = code.data_ptr<uint8_t>();
  float* out = grad_input.data_ptr<float>();
  at::parallel_for(0, planes, Grain(plane),
                   [&](int64_t begin, int64_t end) { BackwardPlanes(g, codes, out, plane, begin, end); });
  return grad_input;
}

}  // namespace detail

at::Tensor ReluMaxPool2x2(const at::Tensor& input) {
  if (!HasFastPath(input)) return torch::max_pool2d(torch::relu(input), 2);
  return ReluMaxPool2x2Function::apply(input);
}

}  // namespace est::kernels
