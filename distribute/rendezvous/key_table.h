#pragma once
/// KeyTable: the keys and values of a store in this process's memory, and the waits on them;
/// the table behind the chief's store server and behind the in-memory store.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace est::distribute::detail {

/// A map of keys to values behind one mutex. Thread-safe.
class KeyTable {
 public:
  using Deadline = std::chrono::steady_clock::time_point;
  /// Polled while waiting (every 100 ms at most): true ends the wait early.
  using Cancelled = std::function<bool()>;

  void set(const std::string& key, const std::string& value);
  /// Adds `delta` to the integer at `key` (0 when unset) and returns the new value; nullopt,
  /// leaving the key as it was, when it holds something other than an integer.
  std::optional<int64_t> add(const std::string& key, int64_t delta);
  /// Waits until every key is set, `deadline` passes or `cancelled` says so; returns the keys
  /// still missing (none: all set).
  std::vector<std::string> wait(const std::vector<std::string>& keys, Deadline deadline,
                                const Cancelled& cancelled = {});
  /// The value of `key` once set, waiting as wait() does, read in the same hold of the lock
  /// (a removal cannot come between); nullopt when it was not set in time.
  std::optional<std::string> get(const std::string& key, Deadline deadline, const Cancelled& cancelled = {});
  /// Removes `key`; false when it was not set.
  bool remove(const std::string& key);
  /// The keys that start with `prefix`, in order.
  std::vector<std::string> list(const std::string& prefix);

 private:
  std::vector<std::string> wait_locked(std::unique_lock<std::mutex>& lock, const std::vector<std::string>& keys,
                                       Deadline deadline, const Cancelled& cancelled);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::string> values_;
};

}  // namespace est::distribute::detail
