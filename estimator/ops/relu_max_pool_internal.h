#pragma once
// What the tests of ReluMaxPool2x2 reach inside it.

namespace est::ops::detail {

/// The widest vectors ReluMaxPool2x2's kernels may use where the CPU has them: 512 (AVX-512,
/// the default), 256 (AVX2) or 0 (the portable loops), so that tests cover each on a machine
/// that has AVX-512.
void AllowVectorBits(int bits);

}  // namespace est::ops::detail
