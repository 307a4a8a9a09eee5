#pragma once
/// The skip of [cuda] tests where fewer CUDA devices are present than they need.

#include "tests/skip.h"

/// Ends a [cuda] test as skipped when `present` (the number of CUDA devices found) is below
/// `needed`.
#define EST_SKIP_UNLESS_CUDA_DEVICES(present, needed)                                           \
  do {                                                                                          \
    const int devices_present = (present);                                                      \
    if (devices_present < (needed)) EST_SKIP("needs " << (needed) << " CUDA device(s), found " \
                                                      << devices_present);                      \
  } while (false)
