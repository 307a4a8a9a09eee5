#include "distribute/backward_overlap.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <thread>

#include "common/error.h"
#include "common/thread_scheduling.h"
#include "distribute/collective/collective.h"

namespace est::distribute {

const char* BackwardOverlapName(BackwardOverlap overlap) {
  switch (overlap) {
    case BackwardOverlap::kAuto: return "auto";
    case BackwardOverlap::kAlways: return "always";
    case BackwardOverlap::kNever: return "never";
  }
  return "unknown";
}

BackwardOverlap ParseBackwardOverlap(const std::string& name, const std::string& what) {
  for (BackwardOverlap overlap : {BackwardOverlap::kAuto, BackwardOverlap::kAlways, BackwardOverlap::kNever}) {
    if (name == BackwardOverlapName(overlap)) return overlap;
  }
  EST_THROW(ConfigError, what, ": unknown backward overlap '", name, "'; expected auto, always or never");
}

bool HasSpareCore(int cpus_of_process, int machine_cpus, int ranks_on_host, int intra_op_threads) {
  const int share = std::max(1, machine_cpus / std::max(1, ranks_on_host));
  return std::min(std::max(1, cpus_of_process), share) > intra_op_threads;
}

bool OverlapsBackward(BackwardOverlap overlap, const Collective& collective) {
  if (overlap != BackwardOverlap::kAuto) return overlap == BackwardOverlap::kAlways;
  if (!collective.allreduce_computes_on_cpu()) return true;
  return HasSpareCore(AllowedCpus(), static_cast<int>(std::thread::hardware_concurrency()), collective.world_size(),
                      at::get_num_threads());
}

}  // namespace est::distribute
