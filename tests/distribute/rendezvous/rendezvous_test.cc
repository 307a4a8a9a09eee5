#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "common/error.h"
#include "common/stop_signals.h"
#include "distribute/rendezvous/rendezvous.h"
#include "distribute/rendezvous/store.h"
#include "tests/distribute/rank_threads.h"
#include "tests/log_capture.h"
#include "tests/test_util.h"

using namespace est::distribute;
using namespace std::chrono_literals;
using est::testing::MessageMatches;

namespace {

RendezvousOptions Options(const std::string& job_id, int rank, int world_size, std::chrono::milliseconds timeout = 10s) {
  RendezvousOptions options;
  options.job_id = job_id;
  options.rank = rank;
  options.world_size = world_size;
  options.timeout = timeout;
  return options;
}

// Every rank of `world_size` rendezvouses in `store`; each then writes its rank into its view
// and reads every other rank's: all views must be one view. Returns the views.
std::vector<std::shared_ptr<Store>> Meet(std::shared_ptr<Store> store, const std::string& job_id, int world_size) {
  return est::testing::RunRanks<std::shared_ptr<Store>>(world_size, [&](int rank) {
    auto view = Rendezvous(store, Options(job_id, rank, world_size));
    view->set("from/" + std::to_string(rank), std::to_string(rank));
    for (int other = 0; other < world_size; ++other) {
      if (view->get("from/" + std::to_string(other), 5s) != std::to_string(other)) throw std::logic_error("mixed views");
    }
    return view;
  });
}

}  // namespace

TEST_CASE("Rendezvous gathers every rank into one view of the store per round", "[distribute]") {
  auto store = CreateInMemoryStore();

  SECTION("1, 2, 3, 5 and 8 ranks meet") {
    for (int world_size : {1, 2, 3, 5, 8}) {
      CAPTURE(world_size);
      CHECK(Meet(store, "job", world_size).size() == static_cast<size_t>(world_size));
    }
  }

  SECTION("a second rendezvous in the same store starts a fresh round") {
    auto first = Meet(store, "job", 3);
    first[0]->set("stale", "1");
    auto second = Meet(store, "job", 3);
    CHECK_FALSE(second[0]->check({"stale"}));
    CHECK(store->check({"job/0/stale", "job/1/from/0"}));
  }

  SECTION("a timeout lists the ranks that never arrived, and a later attempt still meets") {
    const auto errors = est::testing::RunRanksCatching(2, [&](int rank) { Rendezvous(store, Options("job", rank, 4, 300ms)); });
    for (const auto& error : errors) {
      REQUIRE(error);
      CHECK_THROWS_MATCHES(std::rethrow_exception(error), est::TimeoutError,
                           MessageMatches(Catch::Contains("ranks 2, 3 of 4 never arrived within 300 ms") &&
                                          Catch::Contains("job 'job'") && Catch::Contains("in-memory store")));
    }
    CHECK(Meet(store, "job", 4).size() == 4);
    CHECK(store->check({"job/1/from/3"}));
  }

  SECTION("while ranks are missing, a log line names them every progress_interval; the timeout names the source") {
    est::testing::LogCapture log;
    RendezvousOptions options = Options("job", 1, 3, 700ms);
    options.progress_interval = 150ms;
    options.cluster_source = "slurm";
    CHECK_THROWS_MATCHES(Rendezvous(store, options), est::TimeoutError,
                         MessageMatches(Catch::Contains("ranks 0, 2 of 3 never arrived within 700 ms (the cluster "
                                                        "from slurm)")));
    const std::string line = "info: Rendezvous of job 'job' (rank 1 of 3, in-memory store): waiting for ranks 0, 2 "
                             "(the cluster from slurm); ";
    CHECK_THAT(log.text(), Catch::Contains(line));
    CHECK_THAT(log.text(), Catch::Contains(" of 700 ms passed\n"));
    options.progress_interval = 0ms;
    CHECK_THROWS_MATCHES(Rendezvous(store, options), est::ConfigError,
                         MessageMatches(Catch::Contains("progress interval must be positive, got 0 ms")));
  }

  SECTION("a rank joining a round twice (a restarted process) moves everyone to the next round") {
    store->set("rendezvous/job_claims", "1");
    store->set("rendezvous/job_id", "job");
    store->add("job/rendezvous/0/rank/1", 1);  // an earlier process of rank 1 joined round 0, then died
    const auto views = est::testing::RunRanks<std::shared_ptr<Store>>(3, [&](int rank) {
      if (rank != 1) std::this_thread::sleep_for(100ms);  // the restarted rank 1 comes back first
      auto view = Rendezvous(store, Options("job", rank, 3));
      view->set("from/" + std::to_string(rank), "");
      return view;
    });
    CHECK(store->check({"job/1/from/0", "job/1/from/1", "job/1/from/2"}));
  }
}

TEST_CASE("Rendezvous refuses another job's store and bad options", "[distribute]") {
  auto store = CreateInMemoryStore();
  Meet(store, "alpha", 2);
  CHECK_THROWS_MATCHES(Rendezvous(store, Options("beta", 0, 2)), est::ConfigError,
                       MessageMatches(Catch::Contains("'beta'") && Catch::Contains("'alpha'") &&
                                      Catch::Contains("in-memory store")));
  CHECK_THROWS_AS(Rendezvous(store, Options("alpha", 2, 2)), est::ConfigError);
  CHECK_THROWS_AS(Rendezvous(store, Options("alpha", 0, 0)), est::ConfigError);
  CHECK_THROWS_AS(Rendezvous(store, Options("", 0, 1)), est::ConfigError);
  CHECK_THROWS_AS(Rendezvous(nullptr, Options("alpha", 0, 1)), est::ConfigError);
}

TEST_CASE("A rank of another job is refused without touching the owner's keys", "[distribute]") {
  auto store = CreateInMemoryStore();
  std::exception_ptr refused;
  auto views = est::testing::RunRanks<std::shared_ptr<Store>>(2, [&](int rank) -> std::shared_ptr<Store> {
    if (rank == 0) return Rendezvous(store, Options("alpha", 0, 2));
    // Rank 1 of alpha lets a rank of job beta try while alpha's rank 0 waits, then joins.
    store->wait({"alpha/rendezvous/0/rank/0"}, 5s);
    try {
      Rendezvous(store, Options("beta", 0, 2));
    } catch (...) {
      refused = std::current_exception();
    }
    return Rendezvous(store, Options("alpha", 1, 2));
  });
  CHECK(est::testing::MessageOf(refused) ==
        "rendezvous of job 'beta' (rank 0): in-memory store belongs to job 'alpha'; two jobs cannot share a "
        "chief's store: give each job its own chief address or port");
  CHECK(store->list("beta/").empty());
  CHECK(store->add("alpha/rendezvous/0/rank/0", 0) == 1);
  CHECK(store->add("alpha/rendezvous/0/rank/1", 0) == 1);
  views[0]->set("from/0", "0");
  CHECK(views[1]->get("from/0", 1s) == "0");
}

TEST_CASE("A stop signal ends a rank's wait for the others at once", "[distribute]") {
  auto store = CreateInMemoryStore();
  const est::StopSignalGuard stop_signals;
  std::thread signaller([] {
    std::this_thread::sleep_for(200ms);
    ::kill(::getpid(), SIGTERM);
  });
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_MATCHES(Rendezvous(store, Options("stopped-job", 0, 2, 60s)), est::Interrupted,
                       MessageMatches(Catch::Equals("rendezvous of job 'stopped-job' (rank 0) stopped by SIGTERM "
                                                    "before every rank arrived")));
  signaller.join();
  CHECK(std::chrono::steady_clock::now() - start < 5s);
}
