#include <gloo/rendezvous/store.h>

#include <catch2/catch.hpp>
#include <chrono>

#include "common/error.h"
#include "distribute/collective/gloo/gloo_store.h"
#include "distribute/rendezvous/store.h"
#include "tests/test_util.h"

using namespace est::distribute;
using namespace std::chrono_literals;
using est::testing::MessageMatches;

TEST_CASE("Gloo sees our store through its rendezvous::Store interface", "[distribute]") {
  auto store = CreateInMemoryStore();
  auto gloo_store = est::distribute::detail::CreateGlooStore(store, 100ms);
  gloo_store->set("address", {'a', '\0', 'b'});
  CHECK(store->get("address", 1s) == std::string("a\0b", 3));
  CHECK(gloo_store->get("address") == std::vector<char>{'a', '\0', 'b'});
  gloo_store->wait({"address"});
  gloo_store->wait({"address"}, 0ms);
  CHECK_THROWS_MATCHES(gloo_store->wait({"address", "peer"}), est::TimeoutError,
                       MessageMatches(Catch::Contains("key 'peer' not set within 100 ms")));
  CHECK_THROWS_MATCHES(gloo_store->get("peer"), est::TimeoutError, MessageMatches(Catch::Contains("'peer'")));
  CHECK_THROWS_MATCHES(gloo_store->wait({"peer"}, 30ms), est::TimeoutError,
                       MessageMatches(Catch::Contains("within 30 ms")));
}
