// The memory a process may use, and byte counts in words.

#include "common/memory_limit.h"

#include <unistd.h>

#include <catch2/catch.hpp>

using namespace est;

TEST_CASE("ParseCgroupMemoryLimit reads a number and ignores max", "[common]") {
  CHECK(ParseCgroupMemoryLimit("8589934592\n") == uint64_t{8589934592});
  CHECK(ParseCgroupMemoryLimit("0") == uint64_t{0});
  CHECK_FALSE(ParseCgroupMemoryLimit("max\n").has_value());
  CHECK_FALSE(ParseCgroupMemoryLimit("").has_value());
  CHECK_FALSE(ParseCgroupMemoryLimit("12 GiB").has_value());
  CHECK_FALSE(ParseCgroupMemoryLimit("99999999999999999999999").has_value());
}

TEST_CASE("MemoryLimitBytes is at most the machine's memory and not nothing", "[common]") {
  const uint64_t physical = static_cast<uint64_t>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGE_SIZE);
  CHECK(MemoryLimitBytes() <= physical);
  CHECK(MemoryLimitBytes() >= (uint64_t{64} << 20));
}

TEST_CASE("DescribeBytes picks the largest unit under 1024", "[common]") {
  CHECK(DescribeBytes(17) == "17 bytes");
  CHECK(DescribeBytes(1024) == "1.0 KiB");
  CHECK(DescribeBytes(512.0 * (1 << 20)) == "512.0 MiB");
  CHECK(DescribeBytes(3.5 * (uint64_t{1} << 40)) == "3.5 TiB");
}
