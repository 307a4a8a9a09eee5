// ReadAheadPool: threads read an iterator ahead of its consumer in blocks; a consumer that
// skips what was read ahead and then waits on an empty queue still gets the rest.

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "data/dataset.h"
#include "data/ops/read_ahead_pool.h"
#include "tests/data/test_datasets.h"

// After the ATen headers: c10/util/Logging.h defines a CHECK that Catch2 replaces.
#include <catch2/catch.hpp>

using est::data::ReadAheadPool;
using est::testing::Range;
using est::testing::Xs;

TEST_CASE("a read-ahead iterator goes on after skip() takes what its threads read ahead", "[data]") {
  // Capacity 4: the thread reads blocks of 2 while 2 fit, so it stops with 3 elements queued
  // after the first next(). skip(2) takes two of them and leaves room for a block without
  // waking the thread; the queue then runs empty and next() must wake it, not wait forever.
  ReadAheadPool pool(1, 4);
  auto iterator = pool.read_ahead(Range(100).make_iterator());
  REQUIRE(iterator->next().has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the thread fills the queue and sleeps
  CHECK(iterator->skip(2) == 2);
  std::vector<int64_t> expected = {0};
  for (int64_t x = 3; x < 100; ++x) expected.push_back(x);
  std::vector<int64_t> got = {0};
  for (int64_t x : Xs(*iterator)) got.push_back(x);
  CHECK(got == expected);
}
