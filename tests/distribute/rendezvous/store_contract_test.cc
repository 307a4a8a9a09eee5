// What every Store promises, checked on each of them: the in-memory store, the chief's store
// over gRPC (server and client in one), and a prefixed view.

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "common/error.h"
#include "distribute/rendezvous/grpc_store.h"
#include "distribute/rendezvous/store.h"
#include "tests/distribute/rank_threads.h"
#include "tests/test_util.h"

using namespace est::distribute;
using namespace std::chrono_literals;
using est::testing::MessageMatches;

namespace {

struct NamedStore {
  std::shared_ptr<Store> store;
  std::string description;
  std::string key_prefix;  ///< what errors put before a key
};

NamedStore MakeStore(const std::string& kind) {
  if (kind == "in-memory") return {CreateInMemoryStore(), "in-memory store", ""};
  if (kind == "prefixed") return {CreatePrefixStore("job", CreateInMemoryStore()), "in-memory store", "job/"};
  GrpcStoreOptions options;
  options.job_id = "contract";
  options.token = "secret";
  options.timeout = 5s;
  auto served = ServeGrpcStore(options);
  return {served, "store 127.0.0.1:" + std::to_string(served->port()), ""};
}

}  // namespace

TEST_CASE("Every store sets, gets, adds, checks, waits, removes and lists", "[distribute]") {
  const std::string kind = GENERATE("in-memory", "prefixed", "gRPC");
  INFO(kind);
  const NamedStore named = MakeStore(kind);
  const std::shared_ptr<Store>& store = named.store;
  const std::string& description = named.description;
  const std::string& key_prefix = named.key_prefix;
  CHECK(store->describe() == description);

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

  SECTION("add counts from zero, is atomic across threads, and refuses a value that is no integer") {
    CHECK(store->add("n", 0) == 0);
    CHECK(store->add("n", 5) == 5);
    CHECK(store->add("n", -2) == 3);
    est::testing::RunRanks<int>(8, [&](int) {
      for (int i = 0; i < 50; ++i) store->add("counter", 1);
      return 0;
    });
    CHECK(store->add("counter", 0) == 400);
    store->set("text", "not a number");
    CHECK_THROWS_MATCHES(store->add("text", 1), est::CommunicationError,
                         MessageMatches(Catch::Contains(description) && Catch::Contains("text")));
    CHECK(store->get("text", 1s) == "not a number");
  }

  SECTION("get and wait see a key set later by another thread, without polling") {
    std::thread setter([&] {
      std::this_thread::sleep_for(50ms);
      store->set("late", "here");
    });
    const auto start = std::chrono::steady_clock::now();
    CHECK(store->get("late", 5s) == "here");
    setter.join();
    CHECK(std::chrono::steady_clock::now() - start < 1s);
  }

  SECTION("wait names exactly the keys still missing when it times out") {
    store->set("present", "1");
    const auto start = std::chrono::steady_clock::now();
    CHECK_THROWS_MATCHES(store->wait({"present", "missing1", "missing2"}, 200ms), est::TimeoutError,
                         MessageMatches(Catch::Contains(description) &&
                                        Catch::Contains("keys '" + key_prefix + "missing1', '" + key_prefix +
                                                       "missing2' not set within 200 ms") &&
                                        !Catch::Contains("'present'")));
    const auto elapsed = std::chrono::steady_clock::now() - start;
    CHECK(elapsed >= 200ms);
    CHECK(elapsed < 1500ms);
    CHECK_THROWS_MATCHES(store->get("nothing", 50ms), est::TimeoutError,
                         MessageMatches(Catch::Contains("key '" + key_prefix + "nothing' not set within 50 ms")));
  }

  SECTION("remove and list") {
    store->set("round/rank/0", "");
    store->set("round/rank/2", "");
    store->set("round/ranks", "");
    store->set("other", "");
    CHECK(store->list("round/rank/") == std::vector<std::string>{"round/rank/0", "round/rank/2"});
    CHECK(store->remove("round/rank/0"));
    CHECK_FALSE(store->remove("round/rank/0"));
    CHECK_FALSE(store->check({"round/rank/0"}));
    CHECK(store->list("round/rank/") == std::vector<std::string>{"round/rank/2"});
    CHECK(store->list("absent/").empty());
  }
}
