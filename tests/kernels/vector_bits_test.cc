// The vector widths the kernels' tests run on this CPU: a case per width, which CTest reports
// as Skipped where the CPU lacks that width (the other cases then leave it out of their
// EST_GENERATE_VECTOR_BITS branches).

#include "tests/kernels/vector_bits.h"

#include <catch2/catch.hpp>

#include "tests/skip.h"

using est::kernels::detail::CpuVectorBits;
using est::kernels::detail::UsableVectorBits;

TEST_CASE("the kernels' AVX-512 paths run on this CPU, and a cap narrows them", "[kernels][skippable]") {
  if (CpuVectorBits() < 512)
    EST_SKIP("needs AVX-512, this CPU has " << est_test::VectorIsa(CpuVectorBits())
                                            << ": every kernels case left its AVX-512 branch out");
  CHECK(UsableVectorBits() == 512);
  {
    const est_test::VectorBitsCap cap(256);
    CHECK(UsableVectorBits() == 256);
  }
  CHECK(UsableVectorBits() == 512);
}

TEST_CASE("the kernels' AVX2 paths run on this CPU", "[kernels][skippable]") {
  if (CpuVectorBits() < 256)
    EST_SKIP("needs AVX2 with FMA, this CPU has none: every kernels case left its AVX2 branch out");
  const est_test::VectorBitsCap cap(256);
  CHECK(UsableVectorBits() == 256);
}

TEST_CASE("a cap of 0 leaves the kernels scalar on any CPU", "[kernels]") {
  const est_test::VectorBitsCap cap(0);
  CHECK(UsableVectorBits() == 0);
}
