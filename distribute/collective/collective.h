#pragma once
/// Collective: all-reduce, broadcast, all-gather and barrier over the ranks of a job.

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace est::distribute {

class Store;

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
};

/// Options of the Gloo collective.
struct GlooOptions {
  /// The address this rank's Gloo transport binds (and tells its peers): its host in the cluster.
  std::string hostname = "127.0.0.1";
  /// Limit on connecting the full mesh and on every collective call.
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
  /// All-reduce through shared memory when every rank runs on this host, hierarchically
  /// (shared memory within each host, TCP between hosts) where some host runs several ranks,
  /// else over TCP (WithHostHierarchy). False: always over TCP.
  bool shared_memory = true;
};

/// A Gloo collective over TCP (CPU tensors; other devices are staged through host memory),
/// connected through `store`, which every rank shares (a job-prefixed view of the chief's
/// store). Creating it is a rendezvous round of its own in `store` (under "gloo/"), so
/// every rank creates its collectives over one store in the same order, and each gets fresh
/// keys. Throws TimeoutError listing the ranks that never arrived, ConfigError for bad
/// arguments, CommunicationError when `options.hostname` is not this machine's or the
/// connection fails. A world of one uses no network; its `store` may be null. float16 and
/// bfloat16 go over TCP as 16-bit values, each pairwise sum computed in float32 and rounded
/// (as NCCL does); the shared-memory all-reduce sums them in float32. Where the calling
/// thread may run on no more CPUs than LibTorch's intra-op threads, Gloo's TCP event-loop
/// thread runs under SCHED_BATCH, so that it never preempts the thread calling into Gloo
/// (ScopedBatchScheduling). After any error in an operation the collective is broken:
/// create a new one.
std::unique_ptr<Collective> CreateGlooCollective(std::shared_ptr<Store> store, int rank, int world_size,
                                                 const GlooOptions& options = {});

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
