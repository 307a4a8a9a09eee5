#pragma once
/// Keeps glibc's malloc from returning freed tensor memory to the kernel between steps.

namespace est {

/// What TuneMallocForTraining did.
enum class MallocTuning {
  kTuned,       ///< thresholds raised
  kRefused,     ///< glibc refused the thresholds (logged as a warning)
  kLeftToUser,  ///< the environment sets malloc's thresholds, or EST_MALLOC_TUNING=0
  kNotGlibc,    ///< another allocator: nothing to do
};

/// A training step frees and allocates the same large activations every time. glibc
/// serves an allocation over 128 KiB (its dynamic threshold grows, but trimming resets
/// it) with a fresh mmap and unmaps it on free, so each step pays a page fault for every
/// page it touches: on a small CNN that halves the steps/s. This raises glibc's mmap and
/// trim thresholds to 1 GiB, so freed memory stays in the heap for the next step (the
/// process keeps its peak heap size, as a caching allocator does). TuneProcessForTraining
/// calls it (the library never does by itself); calling it again is harmless. It leaves
/// malloc alone when the environment already tunes it (MALLOC_MMAP_THRESHOLD_,
/// MALLOC_TRIM_THRESHOLD_, GLIBC_TUNABLES) or sets EST_MALLOC_TUNING=0.
MallocTuning TuneMallocForTraining();

}  // namespace est
