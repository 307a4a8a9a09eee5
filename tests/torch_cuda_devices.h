#pragma once
/// The skip of LibTorch [cuda] tests: a test that needs more CUDA devices than LibTorch
/// sees (none with a CPU LibTorch) ends with a message instead of failing.

#include <torch/cuda.h>

#include "tests/cuda_devices.h"

/// Ends a [cuda] test, with a message, when LibTorch sees fewer than `n` CUDA devices.
#define EST_REQUIRE_TORCH_CUDA_DEVICES(n) EST_SKIP_UNLESS_CUDA_DEVICES(static_cast<int>(torch::cuda::device_count()), n)
