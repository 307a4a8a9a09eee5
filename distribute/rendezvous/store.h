#pragma once
/// Store: the key-value store of a rendezvous, hosted by the chief (c10d's TCPStore), or
/// in memory for replicas that are threads of one process.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace est::distribute {

/// A key-value store shared by every rank of a job. Every wait has a timeout. The stores
/// created here are thread-safe, and their waits poll (every 20 ms at most).
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
  /// Names the store in error messages: "TCP store 10.0.0.1:29500", "in-memory store".
  virtual std::string describe() const = 0;
};

/// Options of the chief-hosted TCP store.
struct TcpStoreOptions {
  /// Address of the chief: the server takes connections to it only, clients connect to it.
  std::string host = "127.0.0.1";
  /// Port of the chief's store. A server given 0 picks a free port (see TcpStore::port()).
  uint16_t port = 0;
  /// True on the chief, which hosts the store.
  bool is_server = false;
  /// Limit on connecting to (or, for the server, starting) the store.
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
};

/// A Store served over TCP by the chief, which also tells where it is.
class TcpStore : public Store {
 public:
  /// The chief's address, as given in the options.
  virtual const std::string& host() const = 0;
  /// The port of the chief's store: on a server created with port 0, the port it picked.
  virtual uint16_t port() const = 0;
};

/// A TCP store (LibTorch's c10d::TCPStore). On the chief, c10d's server listens on a free
/// port that only loopback reaches (ConfineListenerToHost), behind a StoreFront that listens
/// on `options.host`:`options.port` only and relays whole, valid requests: a malformed or
/// stalled request closes that client's connection with a logged warning. A client may
/// start before the server: it retries about once a second until the timeout. Throws
/// CommunicationError naming host:port when the server cannot listen (the port is in use)
/// or a client cannot connect within the timeout. Thread-safe: ranks' threads may share one store.
std::shared_ptr<TcpStore> CreateTcpStore(const TcpStoreOptions& options);

/// A store in this process's memory (c10d::HashStore), for ranks that are threads (tests,
/// local replicas). Thread-safe.
std::shared_ptr<Store> CreateInMemoryStore();

/// A view of `base` in which every key is prefixed with `prefix` + "/" (one job, one
/// round of a rendezvous, one collective). Errors name the prefixed keys.
std::shared_ptr<Store> CreatePrefixStore(const std::string& prefix, std::shared_ptr<Store> base);

}  // namespace est::distribute
