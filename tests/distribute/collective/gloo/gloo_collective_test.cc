// The Gloo collective with ranks as threads of this process, over an in-memory store:
// all-reduce through shared memory (the ranks share this host) unless turned off, every
// other operation over Gloo's TCP transport on loopback.

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <sched.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "common/error.h"
#include "common/thread_scheduling.h"
#include "distribute/collective/gloo/gloo_collective.h"
#include "distribute/rendezvous/store.h"
#include "tests/cpu_affinity.h"
#include "tests/distribute/collective_cases.h"
#include "tests/skip.h"
#include "tests/distribute/rank_threads.h"
#include "tests/test_util.h"

using namespace est::distribute;
using namespace std::chrono_literals;
using namespace est::testing;

namespace {

const std::vector<int> kWorldSizes = {1, 2, 3, 5, 8};

GlooOptions WithTimeout(std::chrono::milliseconds timeout) {
  GlooOptions options;
  options.timeout = timeout;
  return options;
}

// Runs `body` on every rank of a Gloo collective of `world_size` threads. The collectives
// outlive every thread, so that no rank closes its connections while a peer still uses them.
template <typename Result>
std::vector<Result> OnGlooRanks(int world_size, const std::function<Result(Collective&)>& body) {
  auto store = CreateInMemoryStore();
  std::vector<std::unique_ptr<Collective>> collectives(world_size);
  return est::testing::RunRanks<Result>(world_size, [&](int rank) {
    collectives[rank] = CreateGlooCollective(store, rank, world_size, WithTimeout(20s));
    return body(*collectives[rank]);
  });
}

}  // namespace

TEST_CASE("Gloo allreduce sums and averages every dtype and shape on 1 to 8 ranks", "[distribute]") {
  for (int world_size : kWorldSizes) {
    CAPTURE(world_size);
    const auto results = OnGlooRanks<std::vector<at::Tensor>>(world_size, [&](Collective& collective) {
      std::vector<at::Tensor> reduced;
      for (at::ScalarType type : kAllreduceTypes) {
        for (ReduceOp op : kAllreduceOps) {
          for (const AllreduceShape& shape : kAllreduceShapes) {
            at::Tensor tensor = AllreduceInput(type, shape, collective.rank());
            collective.allreduce(tensor, op);
            reduced.push_back(tensor);
          }
        }
      }
      return reduced;
    });
    for (int rank = 0; rank < world_size; ++rank) {
      size_t index = 0;
      for (at::ScalarType type : kAllreduceTypes) {
        for (ReduceOp op : kAllreduceOps) {
          for (const AllreduceShape& shape : kAllreduceShapes) {
            const at::Tensor& tensor = results[rank][index++];
            const at::Tensor expected = AllreduceExpected(type, shape, op, world_size);
            CAPTURE(rank, at::toString(type), ReduceOpName(op), shape.sizes);
            CHECK(tensor.scalar_type() == type);
            CHECK(tensor.sizes() == expected.sizes());
            CHECK(tensor.is_contiguous() == !shape.transposed);
            const double tolerance = AllreduceTolerance(type);
            CHECK(at::allclose(tensor.to(at::kDouble), expected, tolerance, tolerance));
          }
        }
      }
    }
  }
}

TEST_CASE("Gloo broadcast, allgather and barrier on 1 to 8 ranks", "[distribute]") {
  struct Outcome {
    at::Tensor broadcast_float, broadcast_long, broadcast_bool, gathered, gathered_transposed, gathered_empty;
    int entered_at_exit = 0;
  };
  for (int world_size : kWorldSizes) {
    CAPTURE(world_size);
    const int root = world_size - 1;
    std::atomic<int> entered{0};
    const auto outcomes = OnGlooRanks<Outcome>(world_size, [&](Collective& collective) {
      const int rank = collective.rank();
      Outcome outcome;
      outcome.broadcast_float = at::full({7}, static_cast<float>(rank));
      collective.broadcast(outcome.broadcast_float, root);
      outcome.broadcast_long = (at::arange(15, at::kLong).reshape({3, 5}) + 100 * rank).t();
      collective.broadcast(outcome.broadcast_long, root);
      outcome.broadcast_bool = at::full({5}, rank == root, at::kBool);
      collective.broadcast(outcome.broadcast_bool, root);
      outcome.gathered = collective.allgather(at::arange(6, at::kInt).reshape({2, 3}) + 10 * rank);
      outcome.gathered_transposed = collective.allgather((at::arange(6, at::kDouble).reshape({2, 3}) + rank).t());
      outcome.gathered_empty = collective.allgather(at::empty({0, 2}));
      outcome.entered_at_exit = EnteredBeforeBarrierEnds(collective, entered);
      return outcome;
    });
    for (int rank = 0; rank < world_size; ++rank) {
      CAPTURE(rank);
      const Outcome& outcome = outcomes[rank];
      CHECK(at::equal(outcome.broadcast_float, at::full({7}, static_cast<float>(root))));
      CHECK(at::equal(outcome.broadcast_long, (at::arange(15, at::kLong).reshape({3, 5}) + 100 * root).t()));
      CHECK_FALSE(outcome.broadcast_long.is_contiguous());
      CHECK(outcome.broadcast_bool.all().item<bool>());
      REQUIRE(outcome.gathered.sizes() == at::IntArrayRef({world_size, 2, 3}));
      REQUIRE(outcome.gathered_transposed.sizes() == at::IntArrayRef({world_size, 3, 2}));
      for (int source = 0; source < world_size; ++source) {
        CHECK(at::equal(outcome.gathered[source], at::arange(6, at::kInt).reshape({2, 3}) + 10 * source));
        CHECK(at::equal(outcome.gathered_transposed[source], (at::arange(6, at::kDouble).reshape({2, 3}) + source).t()));
      }
      CHECK(outcome.gathered_empty.sizes() == at::IntArrayRef({world_size, 0, 2}));
      CHECK(outcome.entered_at_exit == world_size);
    }
  }
}

TEST_CASE("Gloo collectives created one after another over one store are independent", "[distribute]") {
  auto store = CreateInMemoryStore();
  std::vector<std::unique_ptr<Collective>> first(3), second(3);
  const auto sums = est::testing::RunRanks<at::Tensor>(3, [&](int rank) {
    first[rank] = CreateGlooCollective(store, rank, 3, WithTimeout(20s));
    second[rank] = CreateGlooCollective(store, rank, 3, WithTimeout(20s));
    at::Tensor a = at::full({4}, rank + 1.0);
    at::Tensor b = at::full({4}, 10.0 * (rank + 1));
    second[rank]->allreduce(b, ReduceOp::kSum);
    first[rank]->allreduce(a, ReduceOp::kSum);
    return at::cat({a, b});
  });
  for (const at::Tensor& sum : sums) {
    CHECK(at::equal(sum, at::cat({at::full({4}, 6.0), at::full({4}, 60.0)})));
  }
}

TEST_CASE("Gloo collective fails within its timeout, naming the ranks", "[distribute]") {
  auto store = CreateInMemoryStore();

  SECTION("ranks that never arrive are listed") {
    const auto start = std::chrono::steady_clock::now();
    const auto errors = est::testing::RunRanksCatching(2, [&](int rank) {
      CreateGlooCollective(store, rank, 3, WithTimeout(500ms));
    });
    CHECK(std::chrono::steady_clock::now() - start < 2s);
    for (const auto& error : errors) {
      REQUIRE(error);
      CHECK_THROWS_MATCHES(std::rethrow_exception(error), est::TimeoutError,
                           MessageMatches(Catch::Contains("Gloo collective") &&
                                          Catch::Contains("rank 2 of 3 never arrived within 500 ms")));
    }
  }

  SECTION("a peer that leaves makes the next operation fail") {
    std::atomic<bool> left{false};
    std::exception_ptr error;
    std::chrono::steady_clock::duration elapsed{};
    est::testing::RunRanks<int>(2, [&](int rank) {
      auto collective = CreateGlooCollective(store, rank, 2, WithTimeout(1s));
      if (rank == 1) {
        collective.reset();
        left = true;
        return 0;
      }
      while (!left) std::this_thread::sleep_for(1ms);
      at::Tensor tensor = at::ones({16});
      const auto start = std::chrono::steady_clock::now();
      try {
        collective->allreduce(tensor, ReduceOp::kSum);
      } catch (...) {
        error = std::current_exception();
      }
      elapsed = std::chrono::steady_clock::now() - start;
      return 0;
    });
    REQUIRE(error);
    CHECK_THROWS_MATCHES(std::rethrow_exception(error), est::Error,
                         MessageMatches(Catch::Contains("Gloo allreduce on rank 0 of 2")));
    CHECK(elapsed < 3s);
  }

  SECTION("a peer that does not take part makes the operation time out") {
    std::atomic<bool> done{false};
    std::exception_ptr error;
    std::chrono::steady_clock::duration elapsed{};
    std::vector<std::unique_ptr<Collective>> collectives(2);
    est::testing::RunRanks<int>(2, [&](int rank) {
      collectives[rank] = CreateGlooCollective(store, rank, 2, WithTimeout(500ms));
      if (rank == 1) {
        while (!done) std::this_thread::sleep_for(1ms);
        return 0;
      }
      at::Tensor tensor = at::ones({16});
      const auto start = std::chrono::steady_clock::now();
      try {
        collectives[rank]->allreduce(tensor, ReduceOp::kSum);
      } catch (...) {
        error = std::current_exception();
      }
      elapsed = std::chrono::steady_clock::now() - start;
      done = true;
      return 0;
    });
    REQUIRE(error);
    CHECK_THROWS_MATCHES(std::rethrow_exception(error), est::TimeoutError,
                         MessageMatches(Catch::Contains("Gloo allreduce on rank 0 of 2 did not complete within 500 ms")));
    CHECK(elapsed >= 400ms);
    CHECK(elapsed < 2s);
  }

  SECTION("an address that is not this machine's is named") {
    // A name that does not resolve: Gloo alone walked an uninitialized address list here,
    // a crash that the sanitizer build showed.
    GlooOptions options = WithTimeout(5s);
    options.hostname = "no-such-host.invalid";
    const auto errors = est::testing::RunRanksCatching(2, [&](int rank) { CreateGlooCollective(store, rank, 2, options); });
    for (const auto& error : errors) {
      REQUIRE(error);
      CHECK_THROWS_MATCHES(std::rethrow_exception(error), est::CommunicationError,
                           MessageMatches(Catch::Contains("no-such-host.invalid")));
    }
  }
}

TEST_CASE("A peer cut off (it stopped beating) fails the calls that wait on it now, not at the timeout",
          "[distribute]") {
  // Rank 2 is connected and alive but takes no part: a stopped process, or a host whose
  // packets stop without its connections closing. Ranks 0 and 1 cut it off, as every member
  // does when the chief finds it silent.
  const bool shared_memory = GENERATE(false, true);
  CAPTURE(shared_memory);
  auto store = CreateInMemoryStore();
  GlooOptions options = WithTimeout(30s);
  options.shared_memory = shared_memory;
  std::vector<std::unique_ptr<Collective>> collectives(3);
  std::atomic<int> finished{0};
  std::vector<std::exception_ptr> errors(2);
  std::vector<std::chrono::steady_clock::duration> elapsed(2);
  std::vector<std::vector<int>> lost(2);
  est::testing::RunRanks<int>(3, [&](int rank) {
    collectives[rank] = CreateGlooCollective(store, rank, 3, options);
    if (rank == 2) {
      while (finished < 2) std::this_thread::sleep_for(1ms);
      return 0;
    }
    Collective& collective = *collectives[rank];
    std::thread cutter([&collective] {
      std::this_thread::sleep_for(300ms);
      collective.cut_off({2});
    });
    at::Tensor tensor = at::ones({1024});
    const auto start = std::chrono::steady_clock::now();
    try {
      collective.allreduce(tensor, ReduceOp::kSum);
    } catch (...) {
      errors[rank] = std::current_exception();
    }
    elapsed[rank] = std::chrono::steady_clock::now() - start;
    cutter.join();
    lost[rank] = collective.lost_ranks();
    ++finished;
    return 0;
  });
  for (int rank = 0; rank < 2; ++rank) {
    CAPTURE(rank);
    REQUIRE(errors[rank]);
    CHECK_THROWS_MATCHES(std::rethrow_exception(errors[rank]), est::CommunicationError,
                         MessageMatches(Catch::Contains("rank 2") && Catch::Contains("stopped beating")));
    CHECK(elapsed[rank] >= 250ms);
    CHECK(elapsed[rank] < 5s);
    CHECK(lost[rank] == std::vector<int>{2});
  }
  // Cut off for good: the next call fails at once too.
  at::Tensor tensor = at::ones({4});
  CHECK_THROWS_AS(collectives[0]->allreduce(tensor, ReduceOp::kSum), est::CommunicationError);
  CHECK_THROWS_MATCHES(collectives[0]->cut_off({3}), est::ConfigError,
                       MessageMatches(Catch::Contains("cannot cut off rank 3 (a rank in [0, 3) expected)")));
}

TEST_CASE("Gloo collective of one rank needs no store and no network", "[distribute]") {
  auto collective = CreateGlooCollective(nullptr, 0, 1);
  CHECK(collective->name() == "gloo");
  CHECK(collective->rank() == 0);
  CHECK(collective->world_size() == 1);
  at::Tensor ints = at::arange(5, at::kInt);
  collective->allreduce(ints, ReduceOp::kMean);
  CHECK(at::equal(ints, at::arange(5, at::kInt)));
  at::Tensor halves = at::full({3}, 1.5, at::kHalf);
  collective->allreduce(halves, ReduceOp::kSum);
  CHECK(at::equal(halves, at::full({3}, 1.5, at::kHalf)));
  collective->broadcast(ints, 0);
  const at::Tensor gathered = collective->allgather(ints.reshape({5, 1}).t());
  CHECK(at::equal(gathered, at::arange(5, at::kInt).reshape({1, 1, 5})));
  collective->barrier();

  at::Tensor flags = at::ones({2}, at::kBool);
  CHECK_THROWS_MATCHES(collective->allreduce(flags, ReduceOp::kSum), est::ConfigError,
                       MessageMatches(Catch::Contains("Bool") && Catch::Contains("bfloat16")));
  CHECK_THROWS_AS(collective->broadcast(ints, 1), est::ConfigError);
  CHECK_THROWS_AS(CreateGlooCollective(nullptr, 0, 2), est::ConfigError);
  CHECK_THROWS_AS(CreateGlooCollective(CreateInMemoryStore(), 2, 2), est::ConfigError);
  CHECK_THROWS_AS(CreateGlooCollective(nullptr, 0, 0), est::ConfigError);
}

TEST_CASE("Gloo allreduce gives the same exact sums through shared memory and over TCP", "[distribute]") {
  // 2.5 M elements: several chunks of the shared-memory path, and odd sizes that split unevenly.
  const int world = 3;
  for (int64_t numel : {int64_t{1}, int64_t{7}, int64_t{2'500'001}}) {
    for (at::ScalarType type : {at::kFloat, at::kDouble, at::kInt, at::kLong}) {
      INFO("numel " << numel << " dtype " << at::toString(type));
      std::vector<at::Tensor> results[2];
      for (bool shared_memory : {false, true}) {
        auto store = CreateInMemoryStore();
        results[shared_memory] = est::testing::RunRanks<at::Tensor>(world, [&](int rank) {
          GlooOptions options = WithTimeout(20s);
          options.shared_memory = shared_memory;
          auto collective = CreateGlooCollective(store, rank, world, options);
          at::Tensor tensor = (at::arange(numel, at::kLong) % 1000 * (rank + 1)).to(type);
          collective->allreduce(tensor, ReduceOp::kSum);
          collective->allreduce(tensor, ReduceOp::kSum);  // twice: the second uses the other slot set
          return tensor;
        });
      }
      const at::Tensor expected = (at::arange(numel, at::kLong) % 1000 * 6 * world).to(type);
      for (int rank = 0; rank < world; ++rank) {
        CHECK(at::equal(results[0][static_cast<size_t>(rank)], expected));
        CHECK(at::equal(results[1][static_cast<size_t>(rank)], expected));
      }
    }
  }
}

TEST_CASE("Gloo sums float16 and bfloat16 over TCP as 16-bit values, the same on every rank", "[distribute]") {
  // Small integers: exact in both types, whatever the order of the pairwise sums. Random
  // values: each rank ends with the same bits, within two roundings of the exact sum.
  const int world = 3;
  const int64_t numel = 1'000'003;
  for (at::ScalarType type : {at::kHalf, at::kBFloat16}) {
    INFO("dtype " << at::toString(type));
    auto store = CreateInMemoryStore();
    auto results = est::testing::RunRanks<std::pair<at::Tensor, at::Tensor>>(world, [&](int rank) {
      GlooOptions options = WithTimeout(20s);
      options.shared_memory = false;
      auto collective = CreateGlooCollective(store, rank, world, options);
      at::Tensor integers = (at::arange(numel, at::kLong) % 50 * (rank + 1)).to(type);
      collective->allreduce(integers, ReduceOp::kSum);
      at::Tensor random = at::randn({numel}, at::TensorOptions().dtype(at::kFloat)).to(type);
      const at::Tensor exact = collective->allgather(random).to(at::kFloat).sum(0);
      collective->allreduce(random, ReduceOp::kSum);
      return std::pair{integers, (random.to(at::kFloat) - exact).abs() / exact.abs().clamp_min(1e-3)};
    });
    const at::Tensor expected = (at::arange(numel, at::kLong) % 50 * 6).to(type);
    const double unit = type == at::kHalf ? 1.0 / 2048 : 1.0 / 256;  // a rounding, relative
    for (int rank = 0; rank < world; ++rank) {
      CHECK(at::equal(results[rank].first, expected));
      CHECK(at::equal(results[rank].second, results[0].second));
    }
    // Cancellation can make a relative error large where the sum is small: the median holds.
    CHECK(results[0].second.median().item<double>() <= 2 * unit);
  }
}

TEST_CASE("the shared-memory all-reduce leaves nothing in /dev/shm and names disagreeing ranks", "[distribute]") {
  // Segments this process made (their names carry the creator's pid): tests running in
  // parallel make their own.
  auto segments = [prefix = "est-allreduce-" + std::to_string(::getpid()) + "-"] {
    int count = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/dev/shm"))
      count += entry.path().filename().string().rfind(prefix, 0) == 0;
    return count;
  };
  const int before = segments();
  REQUIRE(before == 0);
  auto store = CreateInMemoryStore();
  std::vector<std::exception_ptr> errors(2);
  est::testing::RunRanks<int>(2, [&](int rank) {
    auto collective = CreateGlooCollective(store, rank, 2, WithTimeout(5s));
    collective->barrier();   // both have connected, so rank 0 has removed the name
    CHECK(segments() == 0);  // while the segment is still in use
    at::Tensor tensor = at::ones({rank == 0 ? 10 : 12});
    try {
      collective->allreduce(tensor, ReduceOp::kSum);
    } catch (...) {
      errors[static_cast<size_t>(rank)] = std::current_exception();
    }
    return 0;
  });
  for (int rank = 0; rank < 2; ++rank) {
    REQUIRE(errors[static_cast<size_t>(rank)]);
    CHECK_THROWS_MATCHES(std::rethrow_exception(errors[static_cast<size_t>(rank)]), est::CommunicationError,
                         MessageMatches(Catch::Contains("rank " + std::to_string(1 - rank) + " passes a chunk of " +
                                                        std::to_string(rank == 0 ? 12 : 10) + " elements")));
  }
  CHECK(segments() == 0);
}

namespace {

// The threads of this process under `policy`, by thread id.
std::set<int> ThreadsUnder(int policy) {
  std::set<int> threads;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    const int tid = std::stoi(entry.path().filename().string());
    if (::sched_getscheduler(tid) == policy) threads.insert(tid);
  }
  return threads;
}

struct LoopPolicies {
  std::vector<int> rank_policies;       ///< of the ranks' own threads, after connecting and all-reducing
  std::vector<at::Tensor> sums;         ///< each rank's all-reduced tensor
  std::set<int> batch_threads_started;  ///< threads that appeared under SCHED_BATCH
};

// Two ranks, each on a thread bound to `cpus`, connect over TCP and all-reduce.
LoopPolicies ConnectBoundTo(const cpu_set_t& cpus) {
  const std::set<int> before = ThreadsUnder(SCHED_BATCH);
  auto store = CreateInMemoryStore();
  std::vector<std::unique_ptr<Collective>> collectives(2);
  LoopPolicies result;
  result.sums.resize(2);
  result.rank_policies = est::testing::RunRanks<int>(2, [&](int rank) {
    if (::sched_setaffinity(0, sizeof(cpus), &cpus) != 0) return -1;
    GlooOptions options = WithTimeout(20s);
    options.shared_memory = false;  // all-reduce over TCP too
    collectives[rank] = CreateGlooCollective(store, rank, 2, options);
    at::Tensor tensor = at::full({100'000}, rank + 1.0);
    collectives[rank]->allreduce(tensor, ReduceOp::kSum);
    result.sums[rank] = tensor;
    return ::sched_getscheduler(0);
  });
  for (int tid : ThreadsUnder(SCHED_BATCH))
    if (!before.count(tid)) result.batch_threads_started.insert(tid);
  return result;
}

}  // namespace

TEST_CASE("Gloo's TCP event loop runs under SCHED_BATCH where the rank has no core beside its intra-op threads",
          "[distribute]") {
  // A woken event loop that preempts the thread holding a connection's lock spins until
  // the scheduler takes it off the CPU; SCHED_BATCH threads never preempt on waking.
  const LoopPolicies bound = ConnectBoundTo(est::testing::FirstAllowedCpus(at::get_num_threads()));
  CHECK(bound.rank_policies == std::vector<int>{SCHED_OTHER, SCHED_OTHER});
  for (const at::Tensor& sum : bound.sums) CHECK(at::equal(sum, at::full({100'000}, 3.0)));
  CHECK(bound.batch_threads_started.size() >= 1);  // the device's loop (one per device, or one shared)
}

TEST_CASE("Gloo's TCP event loop keeps the default scheduling where the rank has a core to spare",
          "[distribute][skippable]") {
  // With a CPU to spare the loop answers at once, as Gloo starts it.
  if (est::AllowedCpus() <= at::get_num_threads())
    EST_SKIP("needs " << at::get_num_threads() + 1 << " CPUs (" << at::get_num_threads()
                      << " intra-op threads and one to spare), found " << est::AllowedCpus());
  const LoopPolicies spare = ConnectBoundTo(est::testing::FirstAllowedCpus(at::get_num_threads() + 1));
  CHECK(spare.rank_policies == std::vector<int>{SCHED_OTHER, SCHED_OTHER});
  for (const at::Tensor& sum : spare.sums) CHECK(at::equal(sum, at::full({100'000}, 3.0)));
  CHECK(spare.batch_threads_started.empty());
}
