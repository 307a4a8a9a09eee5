#include "common/memory_limit.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace est {
namespace {

std::optional<uint64_t> ReadCgroupLimit(const std::string& path) {
  std::ifstream file(path);
  if (!file) return std::nullopt;
  std::stringstream text;
  text << file.rdbuf();
  return ParseCgroupMemoryLimit(text.str());
}

}  // namespace

std::optional<uint64_t> ParseCgroupMemoryLimit(const std::string& text) {
  size_t end = text.find_first_not_of("0123456789");
  if (end == 0) return std::nullopt;  // "max", empty or garbage
  if (end == std::string::npos) end = text.size();
  if (text.find_first_not_of(" \n", end) != std::string::npos) return std::nullopt;
  try {
    return std::stoull(text.substr(0, end));
  } catch (const std::exception&) {
    return std::nullopt;  // beyond uint64: no limit
  }
}

uint64_t MemoryLimitBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGE_SIZE);
  uint64_t limit = pages > 0 && page_size > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size)
                                              : UINT64_MAX;
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    if (auto cgroup = ReadCgroupLimit(path)) limit = std::min(limit, *cgroup);
  }
  return limit;
}

std::optional<uint64_t> AddressSpaceLimitBytes() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return std::nullopt;
  return static_cast<uint64_t>(limit.rlim_cur);
}

uint64_t AddressSpaceInUseBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0;
  const long page_size = ::sysconf(_SC_PAGE_SIZE);
  if (!(statm >> pages) || page_size <= 0) return 0;
  return pages * static_cast<uint64_t>(page_size);
}

std::string DescribeBytes(double bytes) {
  static const char* const kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  size_t unit = 0;
  while (bytes >= 1024 && unit + 1 < std::size(kUnits)) {
    bytes /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), unit == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[unit]);
  return text;
}

}  // namespace est
