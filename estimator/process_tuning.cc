#include "estimator/process_tuning.h"

#include "common/logging.h"
#include "common/malloc_tuning.h"
#include "estimator/caching_cpu_allocator.h"

namespace est {

ProcessTuning TuneProcessForTraining() {
  ProcessTuning tuning;
  tuning.malloc_thresholds = TuneMallocForTraining() == MallocTuning::kTuned;
  tuning.caching_cpu_allocator = InstallCachingCpuAllocator() == CpuAllocatorInstall::kInstalled;
  Log().info("Process tuned for training: glibc's malloc thresholds {} (EST_MALLOC_TUNING=0 leaves them), "
             "LibTorch's CPU allocator {} (EST_CACHING_CPU_ALLOCATOR=0 leaves it)",
             tuning.malloc_thresholds ? "1 GiB" : "left as they were",
             tuning.caching_cpu_allocator ? "caching" : "left as it was");
  return tuning;
}

}  // namespace est
