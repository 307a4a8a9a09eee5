// The Store over c10d's stores, through the in-memory store (c10d::HashStore).

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "common/error.h"
#include "distribute/rendezvous/store.h"
#include "tests/distribute/rank_threads.h"
#include "tests/test_util.h"

using namespace est::distribute;
using namespace std::chrono_literals;
using est::testing::MessageMatches;

TEST_CASE("In-memory store sets, gets, adds, checks and waits", "[distribute]") {
  auto store = CreateInMemoryStore();
  CHECK(store->describe() == "in-memory store");

  SECTION("values round-trip, binary and empty included") {
    store->set("a", "1");
    store->set("a", "2");
    store->set("binary", std::string("x\0y", 3));
    store->set("empty", "");
    CHECK(store->get("a", 1s) == "2");
    CHECK(store->get("binary", 1s) == std::string("x\0y", 3));
    CHECK(store->get("empty", 1s).empty());
    CHECK(store->check({"a", "binary", "empty"}));
    CHECK_FALSE(store->check({"a", "absent"}));
  }

  SECTION("add counts from zero and is atomic across threads") {
    CHECK(store->add("n", 0) == 0);
    CHECK(store->add("n", 5) == 5);
    CHECK(store->add("n", -2) == 3);
    est::testing::RunRanks<int>(8, [&](int) {
      for (int i = 0; i < 100; ++i) store->add("counter", 1);
      return 0;
    });
    CHECK(store->add("counter", 0) == 800);
  }

  SECTION("get and wait see a key set later by another thread") {
    std::thread setter([&] {
      std::this_thread::sleep_for(50ms);
      store->set("late", "here");
    });
    CHECK(store->get("late", 5s) == "here");
    setter.join();
  }

  SECTION("wait names exactly the keys still missing when it times out") {
    store->set("present", "1");
    const auto start = std::chrono::steady_clock::now();
    CHECK_THROWS_MATCHES(store->wait({"present", "missing1", "missing2"}, 200ms), est::TimeoutError,
                         MessageMatches(Catch::Contains("in-memory store") &&
                                        Catch::Contains("keys 'missing1', 'missing2' not set within 200 ms") &&
                                        !Catch::Contains("'present'")));
    const auto elapsed = std::chrono::steady_clock::now() - start;
    CHECK(elapsed >= 200ms);
    CHECK(elapsed < 1s);
    CHECK_THROWS_MATCHES(store->get("nothing", 50ms), est::TimeoutError,
                         MessageMatches(Catch::Contains("key 'nothing' not set within 50 ms")));
  }
}
