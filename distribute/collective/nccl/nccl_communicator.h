#pragma once
/// NcclCommunicator: one rank of an NCCL communicator on one CUDA device, for raw device
/// buffers. The core under the NCCL collective; it uses no LibTorch.

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "distribute/collective/nccl/nccl_types.h"
#include "distribute/collective/nccl/nccl_watchdog.h"

namespace est::distribute {

class Store;

/// Options of an NCCL communicator.
struct NcclOptions {
  /// Limit on creating the communicator (the unique id's exchange and NCCL's initialisation)
  /// and on every operation, from its issue to its completion on the GPU.
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
  /// The watchdog of the communicator; communicators that share one are aborted together.
  /// Null: the communicator gets a watchdog of its own.
  std::shared_ptr<NcclWatchdog> watchdog;
};

/// One rank of an NCCL communicator of `world_size` ranks, each on its own CUDA device.
/// Operations are issued on the caller's CUDA stream and return once issued; the caller
/// orders its stream's later work after them (as CUDA streams do) or calls synchronize().
/// Every rank issues the same operations in the same order. The watchdog aborts every
/// communicator it watches on an NCCL error, or when an operation has not completed within
/// the timeout; from then on every call throws that error (CommunicationError, or
/// TimeoutError for an overdue operation): create new communicators. One thread at a time.
class NcclCommunicator {
 public:
  /// Creates rank `rank`'s communicator on CUDA device `device`. Rank 0 publishes NCCL's
  /// unique id in `store` and the others read it; creating communicators over one store is a
  /// round of its own (keys "nccl/<n>/..."), so every rank creates them in the same order.
  /// A world of one needs no store (`store` may be null). Initialisation is non-blocking and
  /// polled until the timeout. Throws ConfigError for bad arguments or when there is no CUDA
  /// device `device`, TimeoutError naming the ranks that never arrived, CommunicationError
  /// with NCCL's error text otherwise.
  NcclCommunicator(std::shared_ptr<Store> store, int rank, int world_size, int device,
                   const NcclOptions& options = {});
  /// Finalizes and destroys the communicator, or aborts it when operations are still
  /// running after the timeout or it failed. Never throws.
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  /// This rank, in [0, world_size).
  int rank() const { return rank_; }
  /// Number of ranks.
  int world_size() const { return world_size_; }
  /// The CUDA device index.
  int device() const { return device_; }

  /// In place: `buffer` (`count` elements of `type` on this rank's device) becomes the sum
  /// (or mean, ncclAvg) over the ranks.
  void allreduce(void* buffer, size_t count, NcclDataType type, NcclReduceOp op, cudaStream_t stream);
  /// In place: `buffer` becomes rank `root`'s.
  void broadcast(void* buffer, size_t count, NcclDataType type, int root, cudaStream_t stream);
  /// `output` (world_size * count elements) becomes every rank's `input` (count elements)
  /// in rank order.
  void allgather(const void* input, void* output, size_t count, NcclDataType type, cudaStream_t stream);
  /// Waits until every operation issued so far has completed on the GPU (at most the
  /// timeout), then check()s.
  void synchronize();
  /// Throws the error the watchdog recorded, if any.
  void check() const;
  /// Records `error` as the watchdog's (unless one is recorded) and aborts the communicator
  /// (and the others of its watchdog): operations in flight end, and every call throws it from
  /// then on. Thread-safe: meant for a thread other than the caller of the operations.
  void abort(std::exception_ptr error);

 private:
  /// Issues `call` (an NCCL call on the communicator) and tracks it with an event on `stream`.
  template <typename Call>
  void issue(const std::string& operation, cudaStream_t stream, Call call);

  int rank_;
  int world_size_;
  int device_;
  NcclOptions options_;
  std::shared_ptr<NcclWatchdog> watchdog_;
  std::shared_ptr<NcclComm> comm_;
};

}  // namespace est::distribute
