#pragma once
/// Collective: all-reduce, broadcast, all-gather and barrier over the ranks of a job.

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace est::distribute {

/// How allreduce combines the ranks' tensors.
enum class ReduceOp { kSum, kMean };

/// Collective operations over `world_size` ranks. Every call is made by every rank in the
/// same order (a collective is not thread-safe: one caller at a time). Results are exact
/// for integer types (kMean divides with truncation, as integer division does) and within
/// rounding for floating types. Every call waits at most the collective's timeout and then
/// throws TimeoutError; a peer that fails or disappears gives CommunicationError naming it.
class Collective {
 public:
  virtual ~Collective() = default;
  /// This process's rank in [0, world_size).
  virtual int rank() const = 0;
  /// Number of ranks.
  virtual int world_size() const = 0;
  /// A short name for logs ("gloo", "nccl").
  virtual std::string name() const = 0;

  /// In place: every rank ends with the sum (or mean) over ranks of `tensor`. Supports
  /// float32, float64, float16, bfloat16, int32 and int64 tensors of any shape, empty included.
  virtual void allreduce(at::Tensor& tensor, ReduceOp op) = 0;
  /// In place on every rank: `tensor` becomes `root`'s value.
  virtual void broadcast(at::Tensor& tensor, int root) = 0;
  /// Every rank's `tensor` (same shape and dtype everywhere), stacked along a new dim 0 in rank order.
  virtual at::Tensor allgather(const at::Tensor& tensor) = 0;
  /// Returns once every rank has called barrier().
  virtual void barrier() = 0;
  /// Whether allreduce is copies and sums by the calling thread's CPU (the shared-memory
  /// all-reduce of ranks that all run on this host) rather than a wait on a network or a
  /// device: run beside CPU-bound work on the same cores, it takes that work's time.
  virtual bool allreduce_computes_on_cpu() const { return false; }
  /// After a call failed for a lost peer: the ranks whose loss it was, ascending (a process
  /// that exited, or the rank whose connection was lost first, which every rank names alike);
  /// empty while none is known (no call failed, or it timed out).
  virtual std::vector<int> lost_ranks() const { return {}; }
  /// A function that tells, each time it is called and also after this collective is gone,
  /// which of its ranks are lost by then (their processes exited: ranks on this host); null
  /// where the collective cannot tell. For regrouping after a failure, when a second peer
  /// may die after the first.
  virtual std::function<std::vector<int>()> lost_ranks_watch() const { return nullptr; }
  /// Cuts this rank off from `ranks`, which the caller learned are lost some other way (the
  /// chief saw them stop beating: a host gone without closing its connections, a stopped
  /// process): a call waiting on one of them, now or later, fails with CommunicationError, and
  /// lost_ranks() names the first, as when a peer's process exits. May be called from another
  /// thread while a call runs. A collective that cannot cut does nothing: its call waits for
  /// the timeout.
  virtual void cut_off(const std::vector<int>& ranks) { (void)ranks; }
};

}  // namespace est::distribute
