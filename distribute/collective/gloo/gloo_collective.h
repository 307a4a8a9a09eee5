#pragma once
/// The Gloo collective: all-reduce, broadcast, all-gather and barrier over TCP (the "ring"
/// backend of CreateCollective).

#include <chrono>
#include <memory>
#include <string>

#include "distribute/collective/collective.h"

namespace est::distribute {

class Store;

/// Options of the Gloo collective.
struct GlooOptions {
  /// The address this rank's Gloo transport binds (and tells its peers): its host in the cluster.
  std::string hostname = "127.0.0.1";
  /// Limit on connecting the full mesh and on every collective call.
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
  /// All-reduce through shared memory when every rank runs on this host, hierarchically
  /// (shared memory within each host, TCP between hosts) where some host runs several ranks,
  /// else over TCP (ConnectWithHostHierarchy, as CreateCollective composes every backend
  /// through host memory). False: always over TCP.
  bool shared_memory = true;
};

/// A Gloo collective over TCP (CPU tensors; other devices are staged through host memory),
/// connected through `store`, which every rank shares (a job-prefixed view of the chief's
/// store). Creating it is a rendezvous round of its own in `store` (under "gloo/", and one
/// under "hosts/" with `options.shared_memory`), so
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

}  // namespace est::distribute
