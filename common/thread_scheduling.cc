#include "common/thread_scheduling.h"

#include <sched.h>

#include <thread>

namespace est {

int AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return static_cast<int>(std::thread::hardware_concurrency());
  return CPU_COUNT(&set);
}

// sched_setscheduler with pid 0 changes the calling thread only (Linux schedules threads),
// and a new thread starts with its creator's policy unless SCHED_RESET_ON_FORK is set.
// Moving between SCHED_OTHER and SCHED_BATCH needs no privilege.
ScopedBatchScheduling::ScopedBatchScheduling(bool apply) {
  if (!apply || ::sched_getscheduler(0) != SCHED_OTHER) return;
  const sched_param param{};
  applied_ = ::sched_setscheduler(0, SCHED_BATCH, &param) == 0;
}

ScopedBatchScheduling::~ScopedBatchScheduling() {
  if (!applied_) return;
  const sched_param param{};
  ::sched_setscheduler(0, SCHED_OTHER, &param);
}

}  // namespace est
