// The room training needs under an address-space limit (ulimit -v): enough passes, too little
// names the limit, what is mapped, what OpenBLAS takes and how much to allow.

#include "estimator/address_space_check.h"

#include <catch2/catch.hpp>

#include "common/error.h"
#include "tests/test_util.h"
#include "tests/skip.h"

using namespace est;

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

AddressSpaceNeed OpenBlasNeed(int threads) {
  AddressSpaceNeed need;
  need.blas_buffer_bytes = 129 * kMiB;
  need.blas_threads = threads;
  need.margin_bytes = 256 * kMiB;
  return need;
}

}  // namespace

TEST_CASE("training under an address-space limit needs a BLAS buffer per thread and a margin", "[estimator]") {
  const AddressSpaceNeed need = OpenBlasNeed(2);
  CHECK(need.total() == 514 * kMiB);
  CHECK_NOTHROW(CheckAddressSpaceRoom(std::nullopt, 900 * kMiB, need));
  CHECK_NOTHROW(CheckAddressSpaceRoom(1414 * kMiB, 900 * kMiB, need));
  CHECK_THROWS_MATCHES(
      CheckAddressSpaceRoom(1413 * kMiB, 900 * kMiB, need), ConfigError,
      est::testing::MessageMatches(
          Catch::Contains("the address-space limit (ulimit -v 1446912) leaves 513.0 MiB beyond the 900.0 MiB this "
                          "process has mapped, and training needs 514.0 MiB") &&
          Catch::Contains("a 129.0 MiB buffer for each of its 2 threads' matrix products and retries for ever") &&
          Catch::Contains("Allow at least 1447936 KiB (ulimit -v), or lift the limit") &&
          Catch::Contains("OPENBLAS_NUM_THREADS=1")));
  // A limit below what is mapped already, and a BLAS that is not OpenBLAS.
  CHECK_THROWS_MATCHES(CheckAddressSpaceRoom(800 * kMiB, 900 * kMiB, OpenBlasNeed(0)), ConfigError,
                       est::testing::MessageMatches(Catch::Contains("leaves 0 bytes beyond the 900.0 MiB") &&
                                                    Catch::Contains("training needs 256.0 MiB. Allow at least "
                                                                    "1183744 KiB")));
}

TEST_CASE("this process's training need counts OpenBLAS's threads where OpenBLAS is loaded",
          "[estimator][skippable]") {
  const AddressSpaceNeed need = TrainingAddressSpaceNeed();
  CHECK(need.margin_bytes == 256 * kMiB);
  if (need.blas_threads == 0) {
    EST_SKIP("needs OpenBLAS as LibTorch's BLAS");
  }
  CHECK(need.blas_buffer_bytes == 135266304);
  CHECK(need.blas_threads >= 1);
}
