// How a re-formed training group deals its logical input shards.

#include "distribute/elastic/shard_dealing.h"

#include <catch2/catch.hpp>

#include "common/error.h"

using namespace est;
using namespace est::distribute;
using Shards = std::vector<std::vector<int>>;

TEST_CASE("DealLogicalShards: a lost member's shards go, ascending, to those holding fewest", "[elastic]") {
  // Three members held 0-1, 2-3 and 4-5; the one holding 2-3 was lost: two members are left.
  CHECK(DealLogicalShards({0, 0, -1, -1, 1, 1}, 2) == Shards{{0, 1, 2}, {3, 4, 5}});
  // Every member keeps what it holds when the unheld shards even them out.
  CHECK(DealLogicalShards({0, -1, 1, 1}, 2) == Shards{{0, 1}, {2, 3}});
}

TEST_CASE("DealLogicalShards: a newcomer takes the highest shards of those holding most", "[elastic]") {
  CHECK(DealLogicalShards({0, 0, 0, 1, 1, 1}, 3) == Shards{{0, 1}, {3, 4}, {2, 5}});
  CHECK(DealLogicalShards({0, 0, 0, 0}, 2) == Shards{{0, 1}, {2, 3}});
}

TEST_CASE("DealLogicalShards: nothing held deals every shard afresh, ranks in turn", "[elastic]") {
  CHECK(DealLogicalShards({-1, -1, -1, -1, -1}, 2) == Shards{{0, 2, 4}, {1, 3}});
  CHECK(DealLogicalShards({-1, -1}, 3) == Shards{{0}, {1}, {}});
}

TEST_CASE("DealLogicalShards: a holder beyond the members is an internal error", "[elastic]") {
  CHECK_THROWS_AS(DealLogicalShards({0, 2}, 2), InternalError);
  CHECK_THROWS_AS(DealLogicalShards({-2}, 1), InternalError);
}
