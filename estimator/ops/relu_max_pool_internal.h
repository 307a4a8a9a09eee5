#pragma once
// What the tests of ReluMaxPool2x2 reach inside it.

namespace est::ops::detail {

/// Whether ReluMaxPool2x2 may use its AVX2 kernels where the CPU has them (the default);
/// false runs the portable loops, so that tests cover both on an AVX2 machine.
void AllowAvx2(bool allowed);

}  // namespace est::ops::detail
