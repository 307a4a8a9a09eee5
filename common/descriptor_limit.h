#pragma once
/// Whether this process has run out of file descriptors (ulimit -n): what a failure to open a
/// socket, a file or a pipe should blame, rather than the address or the path it was given.

#include <optional>
#include <string>
#include <string_view>

namespace est {

/// "it holds 24 of the 24 file descriptors its limit allows (ulimit -n 24)" when this process
/// has no file descriptor left, or fewer than a handful, or when `error` (the text of the
/// failure being explained) reports EMFILE ("Too many open files"): by the time a failure is
/// caught, the descriptors of what failed may have been closed again. nullopt otherwise, and
/// where the limit is unlimited.
std::optional<std::string> DescriptorsExhausted(std::string_view error = {});

/// "this process has no file descriptor left: <exhausted>; raise the limit (e.g. ulimit -n
/// 65536)", where `exhausted` is what DescriptorsExhausted() said.
std::string NoDescriptorLeft(const std::string& exhausted);

/// strerror(err), and for EMFILE NoDescriptorLeft(): the text to give for a failure to open a
/// file, a socket or a pipe.
std::string DescribeOpenError(int err);

}  // namespace est
