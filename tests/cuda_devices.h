#pragma once
/// The skip of [cuda] tests where fewer CUDA devices are present than they need.

#include <catch2/catch.hpp>

/// Ends a [cuda] test, with a message, when `present` (the number of CUDA devices found) is
/// below `needed`.
#define EST_SKIP_UNLESS_CUDA_DEVICES(present, needed)                                      \
  do {                                                                                     \
    const int devices_present = (present);                                                 \
    if (devices_present < (needed)) {                                                      \
      WARN("skipped: needs " << (needed) << " CUDA device(s), found " << devices_present); \
      return;                                                                              \
    }                                                                                      \
  } while (false)
