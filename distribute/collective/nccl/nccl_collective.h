#pragma once
/// The NCCL collective: all-reduce, broadcast, all-gather and barrier between CUDA devices
/// (the "nccl" backend of CreateCollective).

#include <c10/core/Device.h>

#include <chrono>
#include <memory>

#include "distribute/collective/collective.h"

namespace est::distribute {

class Store;

/// Options of the NCCL collective.
struct NcclCollectiveOptions {
  /// Limit on creating the communicator (the unique id's exchange and NCCL's initialisation)
  /// and on every collective call, from its issue to its completion on the GPU.
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
};

/// An NCCL collective on CUDA device `device` ("cuda:<index>"; without an index, the current
/// device), one device per rank. `store`, shared by every rank, carries NCCL's unique id (keys
/// under "nccl/"; every rank creates its collectives over one store in the same order; a world
/// of one needs none). Work runs on a stream of its own, ordered after torch's current stream
/// and before its later work, and every call returns once its operation completed on the GPU.
/// Tensors elsewhere (CPU, other devices) are staged through `device`. allreduce sums in the
/// tensor's dtype and kMean then divides (integers with truncation); broadcast and allgather
/// carry any dtype. Throws ConfigError for bad arguments, a device that is not CUDA, or a
/// build without the NCCL collective (EST_WITH_NCCL and EST_WITH_CUDA), TimeoutError naming
/// the ranks that never arrived. An NCCL error or an overdue operation aborts the
/// communicator: that call and every later one throw CommunicationError or TimeoutError.
std::unique_ptr<Collective> CreateNcclCollective(std::shared_ptr<Store> store, int rank, int world_size,
                                                 c10::Device device, const NcclCollectiveOptions& options = {});

}  // namespace est::distribute
