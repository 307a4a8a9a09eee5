#pragma once
/// ScopedBatchScheduling: threads a library starts within a scope do not preempt the
/// threads already running on their CPU; AllowedCpus: the CPUs a thread may run on.

namespace est {

/// The number of CPUs the calling thread may run on (its affinity, which the threads it
/// starts inherit); the machine's where the affinity cannot be read.
int AllowedCpus();

/// While it lives, the calling thread runs under SCHED_BATCH (same nice value), so that
/// the threads it creates inherit that policy; its own policy is restored on destruction.
/// Linux does not let a SCHED_BATCH thread preempt a running thread when it wakes: it runs
/// when its CPU is free or at the next scheduler tick, and keeps its fair share of the
/// CPU. Meant for a library's event-loop thread (Gloo's TCP device thread) whose wake-ups
/// would otherwise preempt compute or a thread holding a lock the loop needs. Does nothing
/// where `apply` is false, where the calling thread is not under SCHED_OTHER (a real-time
/// thread stays as it is) or where the kernel refuses the change.
class ScopedBatchScheduling {
 public:
  explicit ScopedBatchScheduling(bool apply = true);
  ~ScopedBatchScheduling();
  ScopedBatchScheduling(const ScopedBatchScheduling&) = delete;
  ScopedBatchScheduling& operator=(const ScopedBatchScheduling&) = delete;

  /// Whether threads created now get SCHED_BATCH.
  bool applied() const { return applied_; }

 private:
  bool applied_ = false;
};

}  // namespace est
