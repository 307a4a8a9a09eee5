// kAutotune's thread count: the CPUs a process may run on beyond LibTorch's intra-op threads.

#include <ATen/Parallel.h>
#include <sched.h>

#include <mutex>
#include <set>
#include <thread>

#include "common/thread_scheduling.h"
#include "data/dataset.h"
#include "data/ops/autotune.h"
#include "tests/cpu_affinity.h"
#include "tests/data/test_datasets.h"
#include "tests/skip.h"

// After the ATen headers: c10/util/Logging.h defines a CHECK that Catch2 replaces.
#include <catch2/catch.hpp>

using est::data::Element;
using est::data::kAutotune;

namespace {

// Runs `body` on a thread bound to the first `count` CPUs of this thread's affinity, and
// returns what it returns; the thread's LibTorch intra-op threads are the process's.
template <typename Body>
auto OnCpus(int count, Body body) {
  const cpu_set_t chosen = est::testing::FirstAllowedCpus(count);
  decltype(body()) result{};
  bool bound = false;
  std::thread([&] {
    bound = ::sched_setaffinity(0, sizeof(chosen), &chosen) == 0;
    if (bound) result = body();
  }).join();
  REQUIRE(bound);
  return result;
}

// The threads that called a kAutotune map's function over 2000 elements.
size_t MapThreads() {
  std::mutex mutex;
  std::set<std::thread::id> threads;
  auto dataset = est::testing::Range(2000).map(
      [&](Element e) {
        const std::lock_guard<std::mutex> lock(mutex);
        threads.insert(std::this_thread::get_id());
        return e;
      },
      kAutotune);
  auto iterator = dataset.make_iterator();
  while (iterator->next()) {
  }
  return threads.size();
}

}  // namespace

TEST_CASE("kAutotune counts the CPUs the intra-op threads leave free, at least one", "[data]") {
  using est::data::AutotunedThreads;
  CHECK(AutotunedThreads(16, 4) == 12);
  CHECK(AutotunedThreads(2, 1) == 1);
  CHECK(AutotunedThreads(4, 4) == 1);
  CHECK(AutotunedThreads(1, 8) == 1);
  const int intra_op = at::get_num_threads();
  CHECK(est::data::ResolveThreads(3) == 3);
  CHECK(OnCpus(intra_op, [] { return est::data::AutotunedThreads(); }) == 1);
  CHECK(OnCpus(1, [] { return est::data::ResolveThreads(kAutotune); }) == 1);
  // Bound to as many CPUs as its intra-op threads, a kAutotune map calls its function on
  // the consumer's thread only.
  CHECK(OnCpus(intra_op, MapThreads) == 1);
}

TEST_CASE("kAutotune takes the CPUs beyond the intra-op threads, two of them two threads", "[data][skippable]") {
  const int intra_op = at::get_num_threads();
  if (est::AllowedCpus() < intra_op + 2)
    EST_SKIP("needs " << intra_op + 2 << " CPUs (" << intra_op << " intra-op threads and 2 more), found "
                      << est::AllowedCpus());
  CHECK(OnCpus(intra_op + 2, [] { return est::data::AutotunedThreads(); }) == 2);
  CHECK(OnCpus(intra_op + 2, MapThreads) >= 2);
}
