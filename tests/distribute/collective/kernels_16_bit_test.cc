#include "distribute/collective/kernels_16_bit.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

using est::distribute::SumBFloat16;
using est::distribute::SumFloat16;

namespace {

// Random bit patterns (every exponent, NaNs and infinities included) and edge values.
std::vector<uint16_t> Operands(size_t n, uint32_t seed) {
  std::mt19937 random(seed);
  std::vector<uint16_t> values{0x0000, 0x8000, 0x0001, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x3c00, 0x7f7f, 0x7f80};
  while (values.size() < n) values.push_back(static_cast<uint16_t>(random()));
  return values;
}

template <typename Float>
float ToFloat(uint16_t bits) {
  return static_cast<float>(Float(bits, typename Float::from_bits_t{}));
}

// Checks `sum` against Float(float(a) + float(b)) on every pair of operands; NaNs match any NaN.
template <typename Float>
void CheckAgainstC10(void (*sum)(uint16_t*, const uint16_t*, const uint16_t*, size_t)) {
  // 1003 values: the vector loop and its scalar tail both run.
  const std::vector<uint16_t> a = Operands(1003, 1), b = Operands(1003, 2);
  std::vector<uint16_t> out(a.size());
  sum(out.data(), a.data(), b.data(), a.size());
  size_t mismatches = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const float exact = ToFloat<Float>(a[i]) + ToFloat<Float>(b[i]);
    const uint16_t expected = Float(exact).x;
    const bool both_nan = std::isnan(exact) && std::isnan(ToFloat<Float>(out[i]));
    if (out[i] != expected && !both_nan) {
      ++mismatches;
      UNSCOPED_INFO("index " << i << ": " << a[i] << " + " << b[i] << " gave " << out[i] << ", expected " << expected);
    }
  }
  CHECK(mismatches == 0);
  // In place, as Gloo reduces into its output.
  std::vector<uint16_t> in_place = a;
  sum(in_place.data(), in_place.data(), b.data(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isnan(ToFloat<Float>(out[i]))) CHECK(in_place[i] == out[i]);
  }
}

}  // namespace

TEST_CASE("16-bit sums round float32 sums to nearest even, as c10's conversions do", "[distribute]") {
  SECTION("float16") { CheckAgainstC10<c10::Half>(&SumFloat16); }
  SECTION("bfloat16") { CheckAgainstC10<c10::BFloat16>(&SumBFloat16); }
}

TEST_CASE("16-bit sums round ties to even and overflow to infinity", "[distribute]") {
  // float16: 2048 + 1 is a tie between 2048 and 2050 (even mantissa 2048); 65504 + 65504 overflows.
  const std::vector<uint16_t> a{c10::Half(2048.0f).x, c10::Half(65504.0f).x};
  const std::vector<uint16_t> b{c10::Half(1.0f).x, c10::Half(65504.0f).x};
  std::vector<uint16_t> out(2);
  SumFloat16(out.data(), a.data(), b.data(), 2);
  CHECK(ToFloat<c10::Half>(out[0]) == 2048.0f);
  CHECK(std::isinf(ToFloat<c10::Half>(out[1])));
  // bfloat16: 256 + 1 is a tie between 256 and 258.
  const std::vector<uint16_t> c{c10::BFloat16(256.0f).x}, d{c10::BFloat16(1.0f).x};
  SumBFloat16(out.data(), c.data(), d.data(), 1);
  CHECK(ToFloat<c10::BFloat16>(out[0]) == 256.0f);
}

namespace {

// float32 values of every magnitude (beyond float16's range and below its subnormals), signs,
// infinities and NaN, and the same for residuals a quarter as large.
std::vector<float> Floats(size_t n, uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-30, 20);
  std::vector<float> values{0.0f, -0.0f, 65504.0f, 65520.0f, -1e6f, 1e-8f, std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), 1.0f + 1.0f / 4096.0f};
  while (values.size() < n) values.push_back(std::ldexp(mantissa(random), exponent(random)));
  return values;
}

// Checks `round` against r = residual + scale · value rounded by c10 (Float), the residual
// becoming the rounding error, or 0 where that is not finite.
template <typename Float>
void CheckRoundingAgainstC10(void (*round)(const float*, float, float*, uint16_t*, size_t)) {
  const float scale = GENERATE(1.0f, 0.5f, 1.0f / 3.0f);
  CAPTURE(scale);
  const std::vector<float> values = Floats(1003, 3);  // the vector loop and its scalar tail
  std::vector<float> residual = Floats(1003, 4);
  for (float& r : residual) r *= 0.25f;
  std::vector<float> expected_residual(values.size());
  std::vector<uint16_t> expected_wire(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const float r = residual[i] + scale * values[i];
    expected_wire[i] = Float(r).x;
    const float dropped = r - static_cast<float>(Float(r));
    expected_residual[i] = std::isfinite(dropped) ? dropped : 0.0f;
  }
  std::vector<uint16_t> wire(values.size());
  round(values.data(), scale, residual.data(), wire.data(), values.size());
  size_t mismatches = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    const bool wire_matches = wire[i] == expected_wire[i] ||
                              (std::isnan(ToFloat<Float>(wire[i])) && std::isnan(ToFloat<Float>(expected_wire[i])));
    if (!wire_matches || residual[i] != expected_residual[i]) {
      ++mismatches;
      UNSCOPED_INFO("index " << i << ": value " << values[i] << " gave wire " << wire[i] << " residual " << residual[i]
                             << ", expected " << expected_wire[i] << " and " << expected_residual[i]);
    }
  }
  CHECK(mismatches == 0);
}

}  // namespace

TEST_CASE("rounding to 16 bits with error feedback keeps what the rounding dropped, as c10 rounds", "[distribute]") {
  SECTION("float16") { CheckRoundingAgainstC10<c10::Half>(&est::distribute::RoundToFloat16WithResidual); }
  SECTION("bfloat16") {
    CheckRoundingAgainstC10<c10::BFloat16>(&est::distribute::RoundToBFloat16WithResidual);
  }
}
