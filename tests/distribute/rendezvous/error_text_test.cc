#include <catch2/catch.hpp>

#include "distribute/rendezvous/error_text.h"

using namespace est::distribute;
using namespace std::chrono_literals;

TEST_CASE("Error texts name durations, ranks and keys", "[distribute]") {
  CHECK(DescribeDuration(300ms) == "300 ms");
  CHECK(DescribeDuration(2s) == "2 s");
  CHECK(DescribeDuration(1500ms) == "1.5 s");
  CHECK(DescribeDuration(5min) == "300 s");
  CHECK(DescribeRanks({3}) == "rank 3");
  CHECK(DescribeRanks({2, 3}) == "ranks 2, 3");
  CHECK(DescribeKeys({"a"}) == "key 'a'");
  CHECK(DescribeKeys({"a", "b/c"}) == "keys 'a', 'b/c'");
}
