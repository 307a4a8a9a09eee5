#include <catch2/catch.hpp>
#include <chrono>

#include "common/error.h"
#include "distribute/rendezvous/store.h"
#include "tests/test_util.h"

using namespace est::distribute;
using namespace std::chrono_literals;
using est::testing::MessageMatches;

TEST_CASE("Prefix store puts every key under its prefix", "[distribute]") {
  auto base = CreateInMemoryStore();
  auto job = CreatePrefixStore("job", base);
  auto round = CreatePrefixStore("3", job);
  round->set("k", "v");
  CHECK(base->get("job/3/k", 1s) == "v");
  CHECK(round->get("k", 1s) == "v");
  CHECK(round->add("n", 2) == 2);
  CHECK(base->add("job/3/n", 0) == 2);
  CHECK(round->check({"k", "n"}));
  CHECK_FALSE(job->check({"k"}));
  round->wait({"k"}, 1s);
  CHECK(round->describe() == base->describe());
  CHECK_THROWS_MATCHES(round->wait({"k", "absent"}, 20ms), est::TimeoutError,
                       MessageMatches(Catch::Contains("key 'job/3/absent'")));
  CHECK_THROWS_AS(CreatePrefixStore("", base), est::ConfigError);
  CHECK_THROWS_AS(CreatePrefixStore("p", nullptr), est::ConfigError);
}
