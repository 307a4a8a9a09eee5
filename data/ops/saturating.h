#pragma once
/// Internal: element counts that cannot overflow, for skip() and cardinality().

#include <cstdint>
#include <limits>

namespace est::data {

/// a * b for a, b >= 0, or INT64_MAX when the product does not fit.
inline int64_t SaturatingProduct(int64_t a, int64_t b) {
  if (a != 0 && b > std::numeric_limits<int64_t>::max() / a) return std::numeric_limits<int64_t>::max();
  return a * b;
}

/// a + b for a, b >= 0, or INT64_MAX when the sum does not fit.
inline int64_t SaturatingSum(int64_t a, int64_t b) {
  if (b > std::numeric_limits<int64_t>::max() - a) return std::numeric_limits<int64_t>::max();
  return a + b;
}

}  // namespace est::data
