#include "common/malloc_tuning.h"

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "common/logging.h"

namespace est {
namespace {

bool EnvironmentTunesMalloc() {
  for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"})
    if (std::getenv(name) != nullptr) return true;
  const char* switch_value = std::getenv("EST_MALLOC_TUNING");
  return switch_value != nullptr && std::strcmp(switch_value, "0") == 0;
}

}  // namespace

MallocTuning TuneMallocForTraining() {
#if defined(__GLIBC__)
  if (EnvironmentTunesMalloc()) return MallocTuning::kLeftToUser;
  constexpr int kThreshold = 1 << 30;
  if (mallopt(M_MMAP_THRESHOLD, kThreshold) == 1 && mallopt(M_TRIM_THRESHOLD, kThreshold) == 1)
    return MallocTuning::kTuned;
  Log().warn("glibc refused a 1 GiB mmap or trim threshold; training steps may pay page faults");
  return MallocTuning::kRefused;
#else
  return MallocTuning::kNotGlibc;
#endif
}

}  // namespace est
