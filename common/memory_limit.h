#pragma once
/// How much memory this process may use: the machine's, or less where a cgroup limits it.

#include <cstdint>
#include <optional>
#include <string>

namespace est {

/// The smaller of the machine's physical memory and the memory limit of this process's
/// cgroup (v2 `memory.max`, v1 `memory.limit_in_bytes`), in bytes.
uint64_t MemoryLimitBytes();

/// The limit that the text of a cgroup memory file sets ("max" and unparsable text set
/// none).
std::optional<uint64_t> ParseCgroupMemoryLimit(const std::string& text);

/// This process's address-space limit (ulimit -v) in bytes, nullopt when it has none.
std::optional<uint64_t> AddressSpaceLimitBytes();

/// The address space this process has mapped now (/proc/self/statm), 0 when unknown.
uint64_t AddressSpaceInUseBytes();

/// "3.1 TiB", "512 MiB", "17 bytes": a byte count for messages.
std::string DescribeBytes(double bytes);

}  // namespace est
