#pragma once
/// The skip of LibTorch [cuda] tests: a test that needs more CUDA devices than LibTorch
/// sees (none with a CPU LibTorch) ends with a message instead of failing.

#include <torch/cuda.h>

#include <catch2/catch.hpp>

/// Ends a [cuda] test, with a message, when LibTorch sees fewer than `n` CUDA devices.
#define EST_REQUIRE_TORCH_CUDA_DEVICES(n)                                                \
  do {                                                                                   \
    const auto devices_present = static_cast<int>(torch::cuda::device_count());          \
    if (devices_present < (n)) {                                                         \
      WARN("skipped: needs " << (n) << " CUDA device(s), found " << devices_present);    \
      return;                                                                            \
    }                                                                                    \
  } while (false)
