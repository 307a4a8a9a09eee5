#pragma once
/// What every collective's tests run: the all-reduce cases (each dtype of the Collective
/// interface, sum and mean, shapes from empty to non-contiguous, with exact expected values)
/// and the barrier's check.

#include <ATen/ATen.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "distribute/collective/collective.h"

namespace est::testing {

/// A tensor shape of the cases.
struct AllreduceShape {
  std::vector<int64_t> sizes;
  bool transposed;  ///< a 2-D tensor seen through t(): not contiguous
};

inline const std::vector<AllreduceShape> kAllreduceShapes = {
    {{0}, false}, {{1}, false}, {{7}, false}, {{1001}, false}, {{3, 5}, true}};
inline const std::vector<at::ScalarType> kAllreduceTypes = {at::kFloat, at::kDouble, at::kHalf,
                                                            at::kBFloat16, at::kInt, at::kLong};
inline const std::vector<distribute::ReduceOp> kAllreduceOps = {distribute::ReduceOp::kSum,
                                                                distribute::ReduceOp::kMean};

/// What `rank` contributes: small integers, some negative, exact in every type (on the CPU).
inline at::Tensor AllreduceInput(at::ScalarType type, const AllreduceShape& shape, int rank) {
  int64_t elements = 1;
  for (int64_t size : shape.sizes) elements *= size;
  at::Tensor values = (at::arange(elements, at::kLong).remainder(7) - 3 + rank + 1).reshape(shape.sizes).to(type);
  return shape.transposed ? values.t() : values;
}

/// The exact result over `world_size` ranks, as float64 (integer means truncated).
inline at::Tensor AllreduceExpected(at::ScalarType type, const AllreduceShape& shape, distribute::ReduceOp op,
                                    int world_size) {
  at::Tensor sum = at::zeros_like(AllreduceInput(at::kLong, shape, 0));
  for (int rank = 0; rank < world_size; ++rank) sum += AllreduceInput(at::kLong, shape, rank);
  if (op == distribute::ReduceOp::kSum) return sum.to(at::kDouble);
  if (at::isFloatingType(type)) return sum.to(at::kDouble) / world_size;
  return at::div(sum, world_size, "trunc").to(at::kDouble);
}

/// How far a result of `type` may be from the exact value (relative and absolute): the
/// rounding of a mean to the type; 0 for float64 and integers.
inline double AllreduceTolerance(at::ScalarType type) {
  switch (type) {
    case at::kHalf: return 1e-3;
    case at::kBFloat16: return 1e-2;
    case at::kFloat: return 1e-6;
    default: return 0;
  }
}

/// The name of `op` in test messages.
inline const char* ReduceOpName(distribute::ReduceOp op) { return op == distribute::ReduceOp::kSum ? "sum" : "mean"; }

/// One rank's part of a barrier check: waits 5 ms per rank, counts itself in `entered`, and
/// returns how many ranks had counted themselves in once barrier() returned (all of them).
inline int EnteredBeforeBarrierEnds(distribute::Collective& collective, std::atomic<int>& entered) {
  std::this_thread::sleep_for(std::chrono::milliseconds(5 * collective.rank()));
  ++entered;
  collective.barrier();
  return entered.load();
}

}  // namespace est::testing
