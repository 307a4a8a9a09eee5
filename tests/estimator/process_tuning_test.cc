// An Estimator leaves its process's allocators alone; TuneProcessForTraining, which a
// program calls (est-train does), sets both.

#include "estimator/process_tuning.h"

#include <c10/core/CPUAllocator.h>
#include <malloc.h>
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <cstdlib>

#include "common/address_sanitizer.h"
#include "estimator/caching_cpu_allocator.h"
#include "estimator/estimator.h"
#include "tests/estimator/test_models.h"
#include "tests/test_util.h"

using namespace est;

namespace {

// Unsets every variable the tuning reads.
void ClearTuningEnvironment() {
  for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES", "EST_MALLOC_TUNING",
                           "EST_CACHING_CPU_ALLOCATOR"})
    unsetenv(name);
}

// True when glibc serves a 256 MiB block with mmap: its default threshold is in force.
bool LargeBlocksAreMmapped() {
#if EST_UNDER_ASAN
  return true;  // AddressSanitizer's malloc: glibc's thresholds are never reached
#else
  const size_t before = mallinfo2().hblks;
  void* block = std::malloc(size_t{256} << 20);
  REQUIRE(block != nullptr);
  const bool mmapped = mallinfo2().hblks == before + 1;
  std::free(block);
  return mmapped;
#endif
}

}  // namespace

TEST_CASE("an Estimator that trains leaves the process's CPU allocator and malloc thresholds alone",
          "[estimator][allocator]") {
  ClearTuningEnvironment();
#if !EST_UNDER_ASAN
  REQUIRE(mallopt(M_MMAP_THRESHOLD, 128 * 1024) == 1);  // glibc's default
#endif
  c10::Allocator* const before = c10::GetCPUAllocator();
  Estimator estimator(testing::RegressionModelFn, testing::FreshTempDir("process_untouched").string());
  estimator.train([] { return testing::RegressionData(16, /*repeat=*/true); }, TrainOptions().max_steps(3));
  CHECK(c10::GetCPUAllocator() == before);
  CHECK(LargeBlocksAreMmapped());
}

TEST_CASE("TuneProcessForTraining raises malloc's thresholds and installs the caching CPU allocator",
          "[estimator][allocator]") {
  ClearTuningEnvironment();
  const ProcessTuning tuning = TuneProcessForTraining();
  CHECK(tuning.caching_cpu_allocator);
  CHECK(c10::GetCPUAllocator() == InstalledCachingCpuAllocator());
  CHECK(tuning.malloc_thresholds == !EST_UNDER_ASAN);
  CHECK(LargeBlocksAreMmapped() == !tuning.malloc_thresholds);
  // Opted out: both left as they are.
  setenv("EST_MALLOC_TUNING", "0", 1);
  setenv("EST_CACHING_CPU_ALLOCATOR", "0", 1);
  const ProcessTuning left = TuneProcessForTraining();
  CHECK_FALSE(left.malloc_thresholds);
  CHECK_FALSE(left.caching_cpu_allocator);
  ClearTuningEnvironment();
}
