#include <catch2/catch.hpp>

#include "distribute/rendezvous/error_text.h"

#include <vector>

using namespace est::distribute;
using namespace std::chrono_literals;

TEST_CASE("Error texts name durations, ranks and keys", "[distribute]") {
  CHECK(DescribeDuration(300ms) == "300 ms");
  CHECK(DescribeDuration(2s) == "2 s");
  CHECK(DescribeDuration(1500ms) == "1.5 s");
  CHECK(DescribeDuration(5min) == "300 s");
  CHECK(DescribeRanks({3}) == "rank 3");
  CHECK(DescribeRanks({2, 3}) == "ranks 2, 3");
  // Runs as ranges, and a bounded list (a world of a million ranks missing all but one).
  CHECK(DescribeRanks({1, 2, 3, 4, 7, 9, 10, 11}) == "ranks 1-4, 7, 9-11");
  std::vector<int> many;
  for (int rank = 1; rank < 1000000; rank += 2) many.push_back(rank);
  CHECK(DescribeRanks(many) == "ranks 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, 33, 35, 37, 39 and "
                               "499980 more");
  std::vector<int> all(999999);
  for (int rank = 1; rank < 1000000; ++rank) all[static_cast<size_t>(rank - 1)] = rank;
  CHECK(DescribeRanks(all) == "ranks 1-999999");
  CHECK(DescribeKeys({"a"}) == "key 'a'");
  CHECK(DescribeKeys({"a", "b/c"}) == "keys 'a', 'b/c'");
}
