#include "apps/est_launch/cpu_affinity.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "apps/est_launch/cpu_binding.h"
#include "common/error.h"

namespace est_launch {
namespace {

// A dynamically sized cpu_set_t (CPU_ALLOC), for machines with more than CPU_SETSIZE CPUs.
class CpuSet {
 public:
  explicit CpuSet(int num_cpus) : set_(CPU_ALLOC(num_cpus), &Free), size_(CPU_ALLOC_SIZE(num_cpus)) {
    EST_CHECK(set_ != nullptr, est::Error, "cannot allocate a CPU set for ", num_cpus, " CPUs");
    CPU_ZERO_S(size_, set_.get());
  }
  cpu_set_t* get() const { return set_.get(); }
  size_t size() const { return size_; }
  // The CPUs in the set, ascending.
  std::vector<int> cpus() const {
    std::vector<int> cpus;
    for (int cpu = 0; cpu < static_cast<int>(size_ * 8); ++cpu)
      if (CPU_ISSET_S(cpu, size_, set_.get())) cpus.push_back(cpu);
    return cpus;
  }

 private:
  static void Free(cpu_set_t* set) { CPU_FREE(set); }
  std::unique_ptr<cpu_set_t, void (*)(cpu_set_t*)> set_;
  size_t size_;
};

// The calling thread's CPUs; the set grows until the kernel's mask fits (EINVAL).
std::vector<int> ThreadCpus() {
  for (int num_cpus = CPU_SETSIZE;; num_cpus *= 2) {
    CpuSet set(num_cpus);
    const int rc = ::pthread_getaffinity_np(::pthread_self(), set.size(), set.get());
    if (rc == 0) return set.cpus();
    EST_CHECK(rc == EINVAL && num_cpus < (1 << 20), est::Error, "cannot read the CPUs est-launch may run on: ",
              std::strerror(rc));
  }
}

// Binds the calling thread to `cpus`; returns the error number (0 on success).
int SetThreadCpus(const std::vector<int>& cpus) {
  CpuSet set(std::max(CPU_SETSIZE, *std::max_element(cpus.begin(), cpus.end()) + 1));
  for (int cpu : cpus) CPU_SET_S(cpu, set.size(), set.get());
  return ::pthread_setaffinity_np(::pthread_self(), set.size(), set.get());
}

}  // namespace

std::vector<int> AvailableCpus() { return ThreadCpus(); }

ScopedThreadAffinity::ScopedThreadAffinity(const std::vector<int>& cpus) {
  if (cpus.empty()) return;
  std::vector<int> previous = ThreadCpus();
  const int rc = SetThreadCpus(cpus);
  EST_CHECK(rc == 0, est::Error, "cannot bind to CPUs ", CpuListText(cpus), ": ", std::strerror(rc));
  previous_ = std::move(previous);
}

ScopedThreadAffinity::~ScopedThreadAffinity() {
  // Restoring CPUs the thread had a moment ago fails only if they went offline since;
  // then the thread keeps the task's CPUs, which is harmless for a supervisor.
  if (!previous_.empty()) SetThreadCpus(previous_);
}

}  // namespace est_launch
