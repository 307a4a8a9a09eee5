#pragma once
/// The shared-memory all-reduce as a decorator: any collective whose ranks all run on this
/// host all-reduces through one shared-memory segment (SharedMemoryAllreduce) instead of its
/// own transport, and keeps its own transport for everything else.

#include <chrono>
#include <memory>

#include "distribute/collective/collective.h"

namespace est::distribute {

class Store;

/// Returns `inner` with its all-reduce of CPU-stageable tensors (float32, float64, int32,
/// int64; float16 and bfloat16 summed in float32) going through shared memory, when every
/// rank of `inner` runs on this host and can map the segment; otherwise `inner` itself
/// (every rank decides alike, through `store`). `store` is shared by `inner`'s ranks and
/// has fresh keys (one rendezvous round); every rank calls this with the same arguments.
/// broadcast, all-gather and barrier stay on `inner`. The calls through shared memory
/// go through a flight recorder of their own, named "<inner>+shm". A shared-memory wait fails like
/// SharedMemoryAllreduce's: TimeoutError after `timeout` naming the late ranks,
/// CommunicationError when a peer exited; the collective is broken after either.
std::unique_ptr<Collective> WithHostSharedMemory(std::unique_ptr<Collective> inner, Store& store,
                                                 std::chrono::milliseconds timeout);

}  // namespace est::distribute
