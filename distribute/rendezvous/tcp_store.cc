#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/exception.h>

#include <algorithm>
#include <utility>

#include "common/error.h"
#include "distribute/rendezvous/c10d_store.h"
#include "distribute/rendezvous/error_text.h"
#include "distribute/rendezvous/listener_filter.h"
#include "distribute/rendezvous/store.h"
#include "distribute/rendezvous/store_front.h"
#include "distribute/rendezvous/tcp_socket.h"

namespace est::distribute {
namespace {

// A key no one sets, read once by every new connection.
constexpr char kConnectedProbeKey[] = "tcp_store/connected";

// The address of the c10d server behind the chief's front: only the front connects to it.
constexpr char kLoopback[] = "127.0.0.1";

// How long a client may stall in the middle of a request: the front drops it after this.
// The c10d daemon, which serves one request at a time, waits as long at most for a
// connection to its loopback port that does not come through the front.
constexpr std::chrono::seconds kRequestTimeLimit(2);
// How long a client lets the network refuse every address of the chief before it gives up.
constexpr std::chrono::milliseconds kUnreachablePatience(3000);

// A c10d TCPStore (server or client) that remembers where it is; on the chief, with the
// front that takes the clients' connections (destroyed before the c10d server).
class C10dTcpStore final : public TcpStore {
 public:
  C10dTcpStore(std::string host, uint16_t port, std::shared_ptr<Store> store, std::unique_ptr<StoreFront> front)
      : host_(std::move(host)), port_(port), store_(std::move(store)), front_(std::move(front)) {}

  void set(const std::string& key, const std::string& value) override { store_->set(key, value); }
  std::string get(const std::string& key, std::chrono::milliseconds timeout) override {
    return store_->get(key, timeout);
  }
  int64_t add(const std::string& key, int64_t delta) override { return store_->add(key, delta); }
  bool check(const std::vector<std::string>& keys) override { return store_->check(keys); }
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    store_->wait(keys, timeout);
  }
  std::string describe() const override { return store_->describe(); }
  const std::string& host() const override { return host_; }
  uint16_t port() const override { return port_; }

 private:
  std::string host_;
  uint16_t port_;
  std::shared_ptr<Store> store_;
  std::unique_ptr<StoreFront> front_;
};

// Why creating the store failed, in words, from what c10d threw.
std::string Reason(const std::exception& error) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&error)) return c10_error->what_without_backtrace();
  return error.what();
}

// One round trip, so that the server has accepted this connection before anyone can
// destroy it: a c10d 1.13 server torn down with a connection not yet accepted may abort the
// process from its daemon thread.
void Probe(const std::shared_ptr<Store>& store) { store->check({kConnectedProbeKey}); }

c10d::TCPStoreOptions C10dOptions(const TcpStoreOptions& options) {
  c10d::TCPStoreOptions c10d_options;
  c10d_options.port = options.port;
  c10d_options.isServer = options.is_server;
  c10d_options.numWorkers = c10::nullopt;
  c10d_options.waitWorkers = false;
  c10d_options.timeout = options.timeout;
  c10d_options.multiTenant = false;
  return c10d_options;
}

std::shared_ptr<TcpStore> ConnectToStore(const TcpStoreOptions& options) {
  const std::string where = "TCP store " + options.host + ":" + std::to_string(options.port);
  // A chief host that does not resolve or has no route is named within seconds, not after
  // the whole timeout with a guess.
  try {
    CheckReachable(options.host, options.port, std::min(options.timeout, kUnreachablePatience));
  } catch (const CommunicationError& error) {
    EST_THROW(CommunicationError, where, ": ", error.what(), " (is TF_CONFIG's chief address right?)");
  }
  c10::intrusive_ptr<c10d::TCPStore> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(options.host, C10dOptions(options));
  } catch (const c10d::TimeoutError& error) {
    EST_THROW(CommunicationError, where, ": cannot connect within ", DescribeDuration(options.timeout),
              " (is the chief running and serving its store there?): ", Reason(error));
  } catch (const std::exception& error) {
    EST_THROW(CommunicationError, where, ": cannot connect: ", Reason(error));
  }
  auto wrapped = detail::WrapC10dStore(store, where);
  Probe(wrapped);
  return std::make_shared<C10dTcpStore>(options.host, options.port, std::move(wrapped), nullptr);
}

// The chief's store: c10d's server on a free port that only loopback reaches, behind a
// front on the chief's host and port.
std::shared_ptr<TcpStore> ServeStore(const TcpStoreOptions& options) {
  c10d::TCPStoreOptions c10d_options = C10dOptions(options);
  c10d_options.port = 0;
  c10::intrusive_ptr<c10d::TCPStore> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(kLoopback, c10d_options);
  } catch (const std::exception& error) {
    EST_THROW(CommunicationError, "TCP store ", options.host, ":", options.port,
              ": the chief cannot start its c10d store on ", kLoopback, ": ", Reason(error));
  }
  StoreFrontOptions front_options;
  front_options.host = options.host;
  front_options.port = options.port;
  front_options.upstream_port = store->getPort();
  front_options.stall_limit = kRequestTimeLimit;
  // c10d's server listens on every interface: only connections to loopback may open, and
  // one that stalls frees the daemon after kRequestTimeLimit.
  ConfineListenerToHost(front_options.upstream_port, kLoopback);
  LimitListenerIoTime(front_options.upstream_port, kRequestTimeLimit);
  Probe(detail::WrapC10dStore(store, std::string("TCP store ") + kLoopback + ":" +
                                         std::to_string(front_options.upstream_port)));
  auto front = std::make_unique<StoreFront>(front_options);
  const uint16_t port = front->port();
  auto wrapped = detail::WrapC10dStore(store, "TCP store " + options.host + ":" + std::to_string(port));
  return std::make_shared<C10dTcpStore>(options.host, port, std::move(wrapped), std::move(front));
}

}  // namespace

std::shared_ptr<TcpStore> CreateTcpStore(const TcpStoreOptions& options) {
  EST_CHECK(!options.host.empty(), ConfigError, "TCP store: the chief's host is empty");
  detail::QuietC10dWarnings();
  EST_CHECK(options.is_server || options.port != 0, ConfigError, "TCP store client of ", options.host,
            ": port 0 is only for a server (which then picks a free port); give the chief's port");
  EST_CHECK(options.timeout.count() > 0, ConfigError, "TCP store ", options.host, ":", options.port,
            ": the timeout must be positive, got ", options.timeout.count(), " ms");
  return options.is_server ? ServeStore(options) : ConnectToStore(options);
}

}  // namespace est::distribute
