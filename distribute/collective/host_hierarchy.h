#pragma once
/// The all-reduce of a job laid out on hosts: through shared memory where every rank shares
/// one host, and hierarchically (within each host, then across hosts, then within each
/// host again) where some host runs several ranks.

#include <chrono>
#include <functional>
#include <memory>

#include "distribute/collective/collective.h"

namespace est::distribute {

class Store;

/// Connects `world_size` ranks of a network collective over `store` (rank, world size).
using ConnectCollective = std::function<std::unique_ptr<Collective>(std::shared_ptr<Store>, int, int)>;

/// Returns `flat` (a collective whose ranks all talk over the network) with the all-reduce
/// that fits where its ranks run, learned from their host identities through `store`:
/// - every rank on this host: WithHostSharedMemory;
/// - one rank per host: `flat` itself;
/// - otherwise, hierarchical: the ranks of each host sum through shared memory, the first
///   rank of each host (its leader) all-reduces that sum with the other leaders over a
///   collective of their own (`connect_leaders`, world size the number of hosts), and the
///   leader's result reaches its host's ranks through shared memory again. Integers are
///   exact; floats may round differently from the flat all-reduce (another summation
///   order). float16 and bfloat16 are summed in float32 within a host and travel between
///   leaders as 16-bit values.
/// broadcast, all-gather and barrier stay on `flat`. `store` has fresh keys shared by the
/// ranks (one rendezvous round); every rank calls this with the same arguments. Where a
/// host cannot map a shared-memory segment, every rank keeps `flat` (they agree through
/// `store`). Waits are bounded by `timeout`, failures are those of SharedMemoryAllreduce
/// and of the leaders' collective; the collective is broken after any.
std::unique_ptr<Collective> WithHostHierarchy(std::unique_ptr<Collective> flat, std::shared_ptr<Store> store,
                                              std::chrono::milliseconds timeout,
                                              const ConnectCollective& connect_leaders);

/// `connect`'s collective over `store` (a network collective: every rank calls it with the
/// same `store`, `world_size` and `timeout`), with WithHostHierarchy's all-reduce, which learns
/// where the ranks run in a rendezvous round of its own under "hosts/" of `store`; the hosts'
/// leaders connect with `connect` too. A world of one is `connect`'s collective itself.
std::unique_ptr<Collective> ConnectWithHostHierarchy(const ConnectCollective& connect, std::shared_ptr<Store> store,
                                                     int rank, int world_size, std::chrono::milliseconds timeout);

}  // namespace est::distribute
