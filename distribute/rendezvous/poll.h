#pragma once
/// Polling with a deadline, for waits that must not block a store's connection.

#include <chrono>
#include <functional>

namespace est::distribute {

/// Calls `done` until it returns true or `deadline` passes, sleeping between calls (1 ms at
/// first, doubling up to 20 ms). Returns true when `done` returned true; `done` is always
/// called at least once, and once more at the deadline.
bool PollUntil(std::chrono::steady_clock::time_point deadline, const std::function<bool()>& done);

}  // namespace est::distribute
