#pragma once
/// CachingCpuAllocator: LibTorch's CPU tensors allocated from blocks freed earlier in the
/// same size, the most recently freed first, so that a training step's activations land
/// in memory that is still in the CPU's caches.

#include <c10/core/Allocator.h>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace est {

/// Which blocks a CachingCpuAllocator keeps when tensors free them.
struct CachingCpuAllocatorOptions {
  /// Blocks of fewer bytes go back to malloc at once (glibc's per-thread caches serve small
  /// blocks well).
  size_t smallest_cached_bytes = size_t{64} << 10;
  /// Blocks of more bytes go back to malloc at once: a block larger than the CPU's last-level
  /// cache cannot stay in it, and keeping it only holds memory that malloc would reuse for
  /// other sizes.
  size_t largest_cached_bytes = size_t{32} << 20;
  /// The free blocks kept, in bytes, at most: a block freed beyond it pushes out the least
  /// recently freed ones.
  size_t max_cached_bytes = size_t{256} << 20;

  CachingCpuAllocatorOptions& smallest_cached(size_t bytes) {
    smallest_cached_bytes = bytes;
    return *this;
  }
  CachingCpuAllocatorOptions& largest_cached(size_t bytes) {
    largest_cached_bytes = bytes;
    return *this;
  }
  CachingCpuAllocatorOptions& max_cached(size_t bytes) {
    max_cached_bytes = bytes;
    return *this;
  }
};

/// What a CachingCpuAllocator has done since it was made.
struct CachingCpuAllocatorStats {
  int64_t hits = 0;          ///< cacheable allocations served by a kept block
  int64_t misses = 0;        ///< cacheable allocations that called malloc
  int64_t evictions = 0;     ///< kept blocks given back to malloc to stay within the limit
  size_t cached_bytes = 0;   ///< free blocks kept now, in bytes
  size_t cached_blocks = 0;  ///< free blocks kept now
};

/// A c10::Allocator for CPU tensors that keeps freed blocks of `smallest_cached_bytes` to
/// `largest_cached_bytes` and hands out the block last freed in exactly the requested size.
/// A training step allocates and frees the same tensors in the same order every step;
/// glibc's best fit hands each a block that depends on everything allocated in between, so a
/// step's outputs move between blocks from step to step and are written into memory that has
/// left the CPU's caches (on the CNN of `make bench`, 7 % of the Estimator's step). Blocks are
/// 64-byte aligned, as LibTorch's own. Thread-safe: a block freed on one thread can serve the
/// next allocation of another. Under AddressSanitizer a kept block is poisoned, so a use
/// after free is still reported. Kept memory goes back to malloc (not to the system) when the
/// limit pushes it out, when an allocation fails, or when the allocator is destroyed (the one
/// installed for the process never is).
class CachingCpuAllocator final : public c10::Allocator {
 public:
  explicit CachingCpuAllocator(CachingCpuAllocatorOptions options = {});
  /// Frees the kept blocks. Every block it allocated must have been freed before.
  ~CachingCpuAllocator() override;
  CachingCpuAllocator(const CachingCpuAllocator&) = delete;
  CachingCpuAllocator& operator=(const CachingCpuAllocator&) = delete;

  /// `bytes` of 64-byte aligned memory; c10::Error when there is not enough memory even
  /// after the kept blocks are given back.
  c10::DataPtr allocate(size_t bytes) const override;
  /// Frees what allocate() returned, given its data pointer.
  c10::DeleterFnPtr raw_deleter() const override;

  /// Gives every kept block back to malloc.
  void release_cached() const;
  /// Counts since construction and what is kept now.
  CachingCpuAllocatorStats stats() const;

  /// The state shared with the deleter of each block (defined in the .cc).
  struct State;

 private:
  std::unique_ptr<State> state_;
};

/// What InstallCachingCpuAllocator did.
enum class CpuAllocatorInstall {
  kInstalled,   ///< LibTorch's CPU tensors come from the process's CachingCpuAllocator
  kLeftToUser,  ///< EST_CACHING_CPU_ALLOCATOR=0, or the application set an allocator of its own
};

/// Makes one process-wide CachingCpuAllocator LibTorch's CPU allocator: the default options,
/// keeping at most 256 MiB, or a sixteenth of the memory the process may use where that is
/// less. TuneProcessForTraining calls it (the library never does by itself); calling it
/// again is harmless. Tensors allocated before
/// keep their allocator. Leaves LibTorch's allocator alone where EST_CACHING_CPU_ALLOCATOR=0
/// or where the CPU allocator is neither LibTorch's default nor this one (the application's
/// choice).
CpuAllocatorInstall InstallCachingCpuAllocator();

/// The process-wide CachingCpuAllocator once InstallCachingCpuAllocator installed it, else
/// nullptr.
CachingCpuAllocator* InstalledCachingCpuAllocator();

/// False where the environment sets EST_CACHING_CPU_ALLOCATOR=0.
bool CachingCpuAllocatorWanted();

}  // namespace est
