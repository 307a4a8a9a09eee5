#pragma once
/// FirstAllowedCpus: a smaller affinity for a test thread, to stand for a worker bound to
/// fewer cores.

#include <sched.h>

#include <stdexcept>

namespace est::testing {

/// The first `count` CPUs the calling thread may run on (fewer where it may run on fewer),
/// for sched_setaffinity.
inline cpu_set_t FirstAllowedCpus(int count) {
  cpu_set_t allowed, chosen;
  CPU_ZERO(&allowed);
  CPU_ZERO(&chosen);
  if (::sched_getaffinity(0, sizeof(allowed), &allowed) != 0) throw std::runtime_error("sched_getaffinity failed");
  for (int cpu = 0, taken = 0; cpu < CPU_SETSIZE && taken < count; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    CPU_SET(cpu, &chosen);
    ++taken;
  }
  return chosen;
}

}  // namespace est::testing
