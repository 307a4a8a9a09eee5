#pragma once
/// Kernels on 16-bit floats (float16, bfloat16) for the all-reduces that carry them:
/// elementwise sums, and rounding float32 values to them with error feedback.

#include <cstddef>
#include <cstdint>

namespace est::distribute {

/// out[i] = a[i] + b[i] for `n` IEEE float16 values (bit patterns): added in float32 and
/// rounded to nearest even, as c10::Half(float(a) + float(b)). `out` may alias `a` or `b`.
void SumFloat16(uint16_t* out, const uint16_t* a, const uint16_t* b, size_t n);

/// The same for bfloat16 values, rounded as c10::BFloat16(float(a) + float(b)).
void SumBFloat16(uint16_t* out, const uint16_t* a, const uint16_t* b, size_t n);

/// In one pass over `n` values: r = residual[i] + scale · values[i] (in float32);
/// wire[i] = r as IEEE float16, rounded to nearest even as c10::Half(r); residual[i] = r minus
/// that float16's value, or 0 where the difference is not finite (r overflowed, or was NaN).
void RoundToFloat16WithResidual(const float* values, float scale, float* residual, uint16_t* wire, size_t n);

/// The same with bfloat16 on the wire, rounded as c10::BFloat16(r).
void RoundToBFloat16WithResidual(const float* values, float scale, float* residual, uint16_t* wire, size_t n);

}  // namespace est::distribute
