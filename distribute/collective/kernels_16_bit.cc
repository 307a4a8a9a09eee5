#include "distribute/collective/kernels_16_bit.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cmath>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace est::distribute {
namespace {

float HalfToFloat(uint16_t bits) { return static_cast<float>(c10::Half(bits, c10::Half::from_bits())); }
uint16_t FloatToHalf(float value) { return c10::Half(value).x; }

// float32 -> bfloat16, rounded to nearest even, a NaN to c10's quiet NaN: what
// c10::BFloat16(value) gives, in integer arithmetic that vectorizes.
uint16_t FloatToBFloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

float BFloat16ToFloat(uint16_t bits) {
  const uint32_t widened = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &widened, sizeof value);
  return value;
}

#if defined(__x86_64__)
// Eight values at a time with the F16C conversions (any x86-64 CPU since 2012).
__attribute__((target("avx,f16c"))) void SumFloat16F16c(uint16_t* out, const uint16_t* a, const uint16_t* b,
                                                         size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    const __m256 y = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_add_ps(x, y), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  for (; i < n; ++i) out[i] = FloatToHalf(HalfToFloat(a[i]) + HalfToFloat(b[i]));
}

// RoundToFloat16WithResidual eight values at a time.
__attribute__((target("avx,f16c"))) size_t RoundFloat16F16c(const float* values, float scale, float* residual,
                                                            uint16_t* wire, size_t n) {
  const __m256 factor = _mm256_set1_ps(scale);
  const __m256 zero = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 r = _mm256_add_ps(_mm256_loadu_ps(residual + i), _mm256_mul_ps(_mm256_loadu_ps(values + i), factor));
    const __m128i half = _mm256_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 dropped = _mm256_sub_ps(r, _mm256_cvtph_ps(half));
    // d - d is 0 for a finite d and NaN for an infinite or NaN one.
    const __m256 finite = _mm256_cmp_ps(_mm256_sub_ps(dropped, dropped), zero, _CMP_EQ_OQ);
    _mm256_storeu_ps(residual + i, _mm256_and_ps(dropped, finite));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(wire + i), half);
  }
  return i;
}

// Whether this CPU has the F16C conversions and the OS saves the AVX registers (CPUID and
// XGETBV: clang 14's __builtin_cpu_supports does not know "f16c").
bool HasF16c() {
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
    if ((ecx & bit_OSXSAVE) == 0 || (ecx & bit_AVX) == 0 || (ecx & bit_F16C) == 0) return false;
    unsigned low = 0, high = 0;
    __asm__("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
    return (low & 0x6u) == 0x6u;  // XMM and YMM state
  }();
  return has;
}
#endif

// One value of RoundTo*WithResidual, with `round` giving the 16-bit pattern and `widen` its value.
template <typename Round, typename Widen>
void RoundWithResidual(const float* values, float scale, float* residual, uint16_t* wire, size_t begin, size_t n,
                       Round round, Widen widen) {
  for (size_t i = begin; i < n; ++i) {
    const float r = residual[i] + scale * values[i];
    const uint16_t bits = round(r);
    const float dropped = r - widen(bits);
    residual[i] = std::isfinite(dropped) ? dropped : 0.f;
    wire[i] = bits;
  }
}

}  // namespace

void RoundToFloat16WithResidual(const float* values, float scale, float* residual, uint16_t* wire, size_t n) {
  size_t done = 0;
#if defined(__x86_64__)
  if (HasF16c()) done = RoundFloat16F16c(values, scale, residual, wire, n);
#endif
  RoundWithResidual(values, scale, residual, wire, done, n, FloatToHalf, HalfToFloat);
}

void RoundToBFloat16WithResidual(const float* values, float scale, float* residual, uint16_t* wire, size_t n) {
  RoundWithResidual(values, scale, residual, wire, 0, n, FloatToBFloat16, BFloat16ToFloat);
}

void SumFloat16(uint16_t* out, const uint16_t* a, const uint16_t* b, size_t n) {
#if defined(__x86_64__)
  if (HasF16c()) return SumFloat16F16c(out, a, b, n);
#endif
  for (size_t i = 0; i < n; ++i) out[i] = FloatToHalf(HalfToFloat(a[i]) + HalfToFloat(b[i]));
}

void SumBFloat16(uint16_t* out, const uint16_t* a, const uint16_t* b, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = FloatToBFloat16(BFloat16ToFloat(a[i]) + BFloat16ToFloat(b[i]));
}

}  // namespace est::distribute
