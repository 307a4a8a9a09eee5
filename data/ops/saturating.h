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

/// The batches of `batch_size` that `elements` (>= 0) make: a last, partial one counts unless
/// `drop_remainder`.
inline int64_t BatchesOf(int64_t elements, int64_t batch_size, bool drop_remainder) {
  return elements / batch_size + (!drop_remainder && elements % batch_size != 0 ? 1 : 0);
}

}  // namespace est::data
