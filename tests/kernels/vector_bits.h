#pragma once
/// Tests of one kernel path: the cap on the kernels' vectors, and the skip where the CPU's
/// vectors are narrower than the path needs.

#include "kernels/cpu_vectors.h"

#include <catch2/catch.hpp>
#include <iostream>

#include "tests/skip.h"

namespace est_test {

/// The instruction set that gives the kernels `bits`-wide vectors.
inline const char* VectorIsa(int bits) { return bits >= 512 ? "AVX-512" : bits >= 256 ? "AVX2 with FMA" : "none"; }

/// Whether the CPU has `bits`-wide vectors; where it has not, prints EST_SKIP_MARKER "needs …".
inline bool CpuHasVectorBits(int bits) {
  const int cpu = est::kernels::detail::CpuVectorBits();
  if (cpu >= bits) return true;
  // A case that needs the width to run at all is [skippable], and CTest reports it as Skipped.
  std::cout << "\n" EST_SKIP_MARKER "needs " << VectorIsa(bits) << ", this CPU has " << VectorIsa(cpu) << std::endl;
  return false;
}

/// Caps the kernels at `bits`-wide vectors while it lives, then lifts the cap.
class VectorBitsCap {
 public:
  explicit VectorBitsCap(int bits) { est::kernels::detail::AllowVectorBits(bits); }
  ~VectorBitsCap() { est::kernels::detail::AllowVectorBits(512); }
  VectorBitsCap(const VectorBitsCap&) = delete;
  VectorBitsCap& operator=(const VectorBitsCap&) = delete;
};

}  // namespace est_test

/// The vector widths among `bits...` that this CPU has, one GENERATE branch each: a width it
/// lacks is not run, and vector_bits_test.cc's case of that width says so (CTest: Skipped).
#define EST_GENERATE_VECTOR_BITS(...)                                                                 \
  GENERATE(filter([](int bits_) { return est::kernels::detail::CpuVectorBits() >= bits_; },           \
                  values<int>({__VA_ARGS__})))

/// Runs the rest of the test case on the kernels of `bits`-wide vectors, or ends it with
/// EST_SKIP_MARKER "needs …" where the CPU lacks them: a case that needs the width to run at all
/// is tagged [skippable], and CTest reports it as Skipped.
#define EST_RUN_WITH_VECTOR_BITS_OR_SKIP(bits)        \
  if (!est_test::CpuHasVectorBits(bits)) return;      \
  const est_test::VectorBitsCap vector_bits_cap_ { bits }
