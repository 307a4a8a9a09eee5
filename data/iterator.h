#pragma once
/// The pull interface every stage of an input pipeline implements.

#include <cstdint>
#include <optional>

#include "data/element.h"

namespace est::data {

/// A single pass over a Dataset, used by one consumer thread at a time.
class Iterator {
 public:
  virtual ~Iterator() = default;
  /// The next element, or std::nullopt at the end of the input (a normal outcome, never
  /// an exception). Errors in the data or in user functions throw. The iterators of
  /// Dataset keep returning std::nullopt after the end and never call an input iterator
  /// again once it has returned std::nullopt, so a user-written iterator need not.
  virtual std::optional<Element> next() = 0;

  /// Moves past up to `count` elements, to where `count` calls of next() would leave the
  /// iterator, and returns how many it moved past: fewer than `count` only at the end of
  /// the input, after which next() returns std::nullopt (and the Dataset iterators never
  /// call an input iterator again once its skip() came up short). This default calls
  /// next(); the Dataset iterators move past elements without making them wherever the
  /// pipeline allows (see "Skipping" in data/dataset.h), which is how a
  /// restored training job returns to its input position quickly.
  virtual int64_t skip(int64_t count) {
    int64_t skipped = 0;
    while (skipped < count && next()) ++skipped;
    return skipped;
  }
};

}  // namespace est::data
