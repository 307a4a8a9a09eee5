#pragma once
/// Whether this process has run out of file descriptors (ulimit -n): what a failure to open a
/// socket, a file or a pipe should blame, rather than the address or the path it was given.

#include <optional>
#include <string>

namespace est {

/// "it holds 24 of the 24 file descriptors its limit allows (ulimit -n 24)" when this process
/// has no file descriptor left, or fewer than a handful; nullopt while it has room.
std::optional<std::string> DescriptorsExhausted();

}  // namespace est
