#pragma once
/// EST_SKIP: ends a test case that cannot run here, saying why. A test case that may skip is
/// tagged [skippable] (a [cuda] case is, too) and est_add_test makes it a CTest entry of its
/// own, which CTest reports as Skipped when the case printed EST_SKIP_MARKER; `make test` ends
/// with the list of what was skipped and why (cmake/skip_report.py).

#include <iostream>

/// What a skipped case prints before its reason, on a line of its own.
#define EST_SKIP_MARKER "est-test-skipped: "

/// Prints the marker and `reason` (anything `<<` takes) and returns from the test case.
#define EST_SKIP(reason)                                              \
  do {                                                                \
    std::cout << "\n" EST_SKIP_MARKER << reason << std::endl;          \
    return;                                                           \
  } while (false)
