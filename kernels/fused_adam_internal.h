#pragma once
// What the tests of FusedAdamStep reach inside it.

namespace est::kernels::detail {

/// Whether FusedAdamStep must take its square roots from LibTorch's at::sqrt_out between two
/// passes (the path it takes where LibTorch's sqrt is MKL's) even where the registers' sqrt
/// reproduces LibTorch's; false (the default) lets its probe choose, so that tests cover both
/// paths with any LibTorch.
void SquareRootsFromLibTorch(bool forced);

}  // namespace est::kernels::detail
