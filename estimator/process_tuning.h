#pragma once
// The process-wide tuning a training program may ask for: glibc's malloc thresholds and
// LibTorch's CPU allocator. The library never applies either by itself; est-train asks at
// start, and a program of its own calls TuneProcessForTraining() at the start of main.

namespace est {

/// What TuneProcessForTraining did.
struct ProcessTuning {
  /// glibc's mmap and trim thresholds were raised to 1 GiB: a step's freed activations stay
  /// in the heap for the next step instead of being unmapped and faulted in again. False
  /// where the environment tunes malloc (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_,
  /// GLIBC_TUNABLES), sets EST_MALLOC_TUNING=0, or malloc is not glibc's.
  bool malloc_thresholds = false;
  /// LibTorch's CPU tensors come from a CachingCpuAllocator: a freed block is handed to the
  /// next allocation of its size while it is still in the CPU's caches. False where
  /// EST_CACHING_CPU_ALLOCATOR=0 or the program set a CPU allocator of its own.
  bool caching_cpu_allocator = false;
};

/// Tunes this process for training: both of ProcessTuning's. Calling it again is harmless;
/// tensors allocated before keep their allocator. Logs what it did.
ProcessTuning TuneProcessForTraining();

}  // namespace est
