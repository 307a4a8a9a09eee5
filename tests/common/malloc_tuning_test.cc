#include "common/malloc_tuning.h"

#include <malloc.h>
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>

#include "tests/skip.h"
#include "tests/test_util.h"

// AddressSanitizer replaces malloc: mallopt and mallinfo2 never reach glibc's allocator,
// whose thresholds these tests measure.
#if EST_UNDER_ASAN

TEST_CASE("under AddressSanitizer TuneMallocForTraining reports that malloc refused the thresholds", "[malloc]") {
  unsetenv("EST_MALLOC_TUNING");
  unsetenv("MALLOC_MMAP_THRESHOLD_");
  unsetenv("MALLOC_TRIM_THRESHOLD_");
  unsetenv("GLIBC_TUNABLES");
  CHECK(est::TuneMallocForTraining() == est::MallocTuning::kRefused);
}

#endif  // EST_UNDER_ASAN

// Ends a case under AddressSanitizer, which replaces glibc's malloc (make release-checks runs
// these cases in the optimized tree).
#define SkipUnderAddressSanitizer()                                                                  \
  do {                                                                                               \
    if (EST_UNDER_ASAN) EST_SKIP("needs glibc's malloc, which AddressSanitizer replaces (make test " \
                                 "runs this case in the optimized tree: make release-checks)");    \
  } while (false)

namespace {

// Number of blocks glibc serves with mmap right now.
size_t MmappedBlocks() { return mallinfo2().hblks; }

// Larger than the block the first case leaves free in the heap, so the cases hold in any order.
constexpr size_t kUntunedBlock = size_t{256} << 20;

// Unsets every variable TuneMallocForTraining reads.
void ClearMallocEnvironment() {
  for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES", "EST_MALLOC_TUNING"})
    unsetenv(name);
}

}  // namespace

TEST_CASE("after TuneMallocForTraining a 64 MiB block comes from the heap, not from mmap", "[malloc][skippable]") {
  SkipUnderAddressSanitizer();
  ClearMallocEnvironment();
  REQUIRE(est::TuneMallocForTraining() == est::MallocTuning::kTuned);
  const size_t before = MmappedBlocks();
  void* block = std::malloc(size_t{64} << 20);
  REQUIRE(block != nullptr);
  std::memset(block, 1, size_t{64} << 20);
  CHECK(MmappedBlocks() == before);
  std::free(block);
}

TEST_CASE("with glibc's defaults a 256 MiB block is mmapped (the cost the tuning removes)", "[malloc][skippable]") {
  SkipUnderAddressSanitizer();
  ClearMallocEnvironment();
  REQUIRE(mallopt(M_MMAP_THRESHOLD, 128 * 1024) == 1);  // back to the default threshold
  const size_t before = MmappedBlocks();
  void* block = std::malloc(kUntunedBlock);
  REQUIRE(block != nullptr);
  CHECK(MmappedBlocks() == before + 1);
  std::free(block);
}

TEST_CASE("TuneMallocForTraining leaves malloc to the environment that tunes it or opts out", "[malloc][skippable]") {
  SkipUnderAddressSanitizer();
  ClearMallocEnvironment();
  SECTION("EST_MALLOC_TUNING=0") { setenv("EST_MALLOC_TUNING", "0", 1); }
  SECTION("MALLOC_MMAP_THRESHOLD_") { setenv("MALLOC_MMAP_THRESHOLD_", "131072", 1); }
  SECTION("MALLOC_TRIM_THRESHOLD_") { setenv("MALLOC_TRIM_THRESHOLD_", "131072", 1); }
  SECTION("GLIBC_TUNABLES") { setenv("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=131072", 1); }
  REQUIRE(mallopt(M_MMAP_THRESHOLD, 128 * 1024) == 1);
  CHECK(est::TuneMallocForTraining() == est::MallocTuning::kLeftToUser);
  const size_t before = MmappedBlocks();
  void* block = std::malloc(kUntunedBlock);
  REQUIRE(block != nullptr);
  CHECK(MmappedBlocks() == before + 1);  // untouched: still mmapped
  std::free(block);
  ClearMallocEnvironment();
}
