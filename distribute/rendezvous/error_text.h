#pragma once
/// Pieces of the error messages of the rendezvous, the stores and the collectives.

#include <chrono>
#include <string>
#include <vector>

namespace est::distribute {

/// A duration as a person reads it: "2 s", "1.5 s", "300 ms".
std::string DescribeDuration(std::chrono::milliseconds duration);

/// A time of day in UTC, to the millisecond: "12:03:04.512 UTC".
std::string DescribeUtcTime(std::chrono::system_clock::time_point time);

/// Ranks as a list: "rank 3", "ranks 2, 3", three or more in a row as a range ("ranks 4-9"),
/// at most 20 parts and then how many more ("… 39 and 499980 more").
std::string DescribeRanks(const std::vector<int>& ranks);

/// Quoted keys as a list: "key 'a'", "keys 'a', 'b'".
std::string DescribeKeys(const std::vector<std::string>& keys);

}  // namespace est::distribute
