#pragma once
/// Store: the key-value store of a rendezvous, served by the chief over gRPC (grpc_store.h),
/// or in memory for replicas that are threads of one process.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace est::distribute {

/// A key-value store shared by every rank of a job. Every wait has a timeout. The stores
/// created here are thread-safe; their waits wake when a key is set.
class Store {
 public:
  virtual ~Store() = default;
  /// Sets `key` to `value`, replacing any previous value.
  virtual void set(const std::string& key, const std::string& value) = 0;
  /// The value of `key`, waiting up to `timeout` for it to be set; TimeoutError naming the key otherwise.
  virtual std::string get(const std::string& key, std::chrono::milliseconds timeout) = 0;
  /// Atomically adds `delta` to the integer at `key` (0 when unset) and returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  /// True when every key is set, without waiting.
  virtual bool check(const std::vector<std::string>& keys) = 0;
  /// Waits until every key is set; TimeoutError naming the keys still missing otherwise.
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  /// Removes `key`; false when it was not set.
  virtual bool remove(const std::string& key) = 0;
  /// The keys that start with `prefix`, in order (the ranks that joined a round).
  virtual std::vector<std::string> list(const std::string& prefix) = 0;
  /// Names the store in error messages: "store 10.0.0.1:29500", "in-memory store".
  virtual std::string describe() const = 0;
};

/// A store in this process's memory, for ranks that are threads (tests, local replicas).
std::shared_ptr<Store> CreateInMemoryStore();

/// A view of `base` in which every key is prefixed with `prefix` + "/" (one job, one
/// round of a rendezvous, one collective). Errors name the prefixed keys; list() takes and
/// returns keys without the prefix.
std::shared_ptr<Store> CreatePrefixStore(const std::string& prefix, std::shared_ptr<Store> base);

}  // namespace est::distribute
