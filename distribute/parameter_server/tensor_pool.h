#pragma once
/// TensorPool: CPU buffers kept between calls of the variable service, so that a step's
/// transfers land in memory that is already mapped instead of in fresh allocations (which
/// gRPC's threads would take from mmap and fault in page by page). Internal to the parameter
/// servers.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace est::distribute {

/// Buffers by (owner, shard, slot). Thread-safe.
class TensorPool {
 public:
  /// Whose buffer: a worker, a ps task, or 0 where one owner serves all.
  using Key = std::tuple<uint32_t, uint32_t, std::string>;

  /// A contiguous CPU tensor of `shape` and `dtype` that nobody else holds: a kept one whose
  /// last user let go of it (its values are stale), or a new one, kept for later when fewer
  /// than kBuffersPerKey are.
  at::Tensor take(const Key& key, at::IntArrayRef shape, at::ScalarType dtype);

  /// Buffers kept per key at most: as many as calls that use the key at once.
  static constexpr size_t kBuffersPerKey = 4;

 private:
  std::mutex mutex_;
  std::map<Key, std::vector<at::Tensor>> buffers_;
};

}  // namespace est::distribute
