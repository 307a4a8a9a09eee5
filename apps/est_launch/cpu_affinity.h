#pragma once
/// The CPU affinity of est-launch itself: which CPUs it may run on, and a scope in which
/// the calling thread runs on fewer, so that a process it spawns inherits them.

#include <vector>

namespace est_launch {

/// The CPUs the calling thread may run on (sched_getaffinity), in ascending order; throws
/// est::Error with the OS error when they cannot be read.
std::vector<int> AvailableCpus();

/// Restricts the calling thread to `cpus` for its lifetime and then restores the thread's
/// previous CPUs. An empty list changes nothing. Processes spawned by the thread meanwhile
/// inherit `cpus` as their affinity.
class ScopedThreadAffinity {
 public:
  /// Throws est::Error naming the CPUs and the OS error when the thread cannot be bound.
  explicit ScopedThreadAffinity(const std::vector<int>& cpus);
  ~ScopedThreadAffinity();
  ScopedThreadAffinity(const ScopedThreadAffinity&) = delete;
  ScopedThreadAffinity& operator=(const ScopedThreadAffinity&) = delete;

 private:
  std::vector<int> previous_;  // empty when nothing was changed
};

}  // namespace est_launch
