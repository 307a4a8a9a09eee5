// Workers whose strategy settings differ are refused when they connect, every one of them
// naming each differing setting and the workers holding each value.

#include "distribute/rendezvous/settings_agreement.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <exception>
#include <string>
#include <vector>

#include "common/error.h"
#include "distribute/rendezvous/store.h"
#include "tests/distribute/rank_threads.h"

using namespace est::distribute;
using namespace std::chrono_literals;

TEST_CASE("CheckSameSettings passes equal settings and names every difference on every worker", "[distribute]") {
  SECTION("equal") {
    auto store = CreateInMemoryStore();
    const std::vector<std::exception_ptr> errors = est::testing::RunRanksCatching(3, [&](int rank) {
      CheckSameSettings(*store, rank, 3, {{"local devices", "2"}, {"buffer sync", "broadcast"}}, 5s);
    });
    for (const auto& error : errors) CHECK_FALSE(error);
  }
  SECTION("different") {
    auto store = CreateInMemoryStore();
    const std::vector<StrategySettings> settings = {
        {{"local devices", "2"}, {"buffer sync", "broadcast"}, {"bucket cap bytes", "26214400"}},
        {{"local devices", "1"}, {"buffer sync", "broadcast"}, {"bucket cap bytes", "26214400"}},
        {{"local devices", "2"}, {"buffer sync", "average"}, {"bucket cap bytes", "26214400"}},
    };
    const std::vector<std::exception_ptr> errors = est::testing::RunRanksCatching(3, [&](int rank) {
      CheckSameSettings(*store, rank, 3, settings[static_cast<size_t>(rank)], 5s);
    });
    for (const auto& error : errors) {
      REQUIRE(error);
      try {
        std::rethrow_exception(error);
      } catch (const est::ConfigError& e) {
        CHECK(std::string(e.what()) ==
              "the strategies of the 3 workers differ: local devices is 1 on worker 1 and 2 on workers 0, 2; buffer "
              "sync is average on worker 2 and broadcast on workers 0, 1; every worker must run with the same "
              "strategy settings");
      }
    }
  }
  SECTION("a worker that never publishes its settings is a timeout, not a hang") {
    auto store = CreateInMemoryStore();
    CHECK_THROWS_AS(CheckSameSettings(*store, 0, 2, {{"local devices", "1"}}, 200ms), est::TimeoutError);
  }
}

TEST_CASE("CheckGroupSettings lets a worker with the group's settings join, and names each difference",
          "[distribute]") {
  auto store = CreateInMemoryStore();
  PublishGroupSettings(*store, {{"communication", "ring"}, {"local devices", "1"}, {"buffer sync", "broadcast"}});
  CHECK_NOTHROW(CheckGroupSettings(
      *store, {{"communication", "ring"}, {"local devices", "1"}, {"buffer sync", "broadcast"}}, 1s));
  try {
    CheckGroupSettings(*store, {{"communication", "nccl"}, {"local devices", "1"}, {"buffer sync", "average"}}, 1s);
    FAIL("a worker with other settings joined");
  } catch (const est::ConfigError& error) {
    CHECK(std::string(error.what()) ==
          "this worker cannot join the training group: its strategy differs: communication is ring in the group and "
          "nccl on this worker; buffer sync is broadcast in the group and average on this worker; every worker must "
          "run with the same strategy settings");
  }
  // Nothing published: the wait ends after the timeout.
  CHECK_THROWS_AS(CheckGroupSettings(*CreateInMemoryStore(), {{"communication", "ring"}}, 50ms), est::TimeoutError);
}
