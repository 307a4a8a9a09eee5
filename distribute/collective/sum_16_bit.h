#pragma once
/// Elementwise sums of 16-bit floats for the all-reduces that carry them as they are.

#include <cstddef>
#include <cstdint>

namespace est::distribute::detail {

/// out[i] = a[i] + b[i] for `n` IEEE float16 values (bit patterns): added in float32 and
/// rounded to nearest even, as c10::Half(float(a) + float(b)). `out` may alias `a` or `b`.
void SumFloat16(uint16_t* out, const uint16_t* a, const uint16_t* b, size_t n);

/// The same for bfloat16 values, rounded as c10::BFloat16(float(a) + float(b)).
void SumBFloat16(uint16_t* out, const uint16_t* a, const uint16_t* b, size_t n);

}  // namespace est::distribute::detail
