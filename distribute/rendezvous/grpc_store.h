#pragma once
/// The chief's rendezvous store over gRPC: a server (StoreService, store_service.proto) that
/// the chief runs at its cluster address, and a Store client that every rank uses. Every
/// call carries the job id and the job's token; a server refuses calls without the right
/// ones. Clients reconnect and retry with back-off while their deadline lasts.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "distribute/rendezvous/store.h"
#include "net/tls_options.h"

namespace est::distribute {

/// Where the chief's store is and what a call must carry.
struct GrpcStoreOptions {
  /// The chief's address: the server binds this host only; clients connect to it.
  std::string host = "127.0.0.1";
  /// The server's port; a server given 0 picks a free one (GrpcStoreServer::port()).
  uint16_t port = 0;
  /// The job's id: calls with another id are refused.
  std::string job_id = "default";
  /// The job's shared secret (EST_JOB_TOKEN); empty when the job has none.
  std::string token;
  /// Limit on a client's connecting and on each of its calls that does not wait for keys.
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
  /// While a client waits for a server that does not listen yet (a chief that starts late), a
  /// log line says so this often.
  std::chrono::milliseconds progress_interval = std::chrono::seconds(30);
  /// Largest value, and so largest message, a call may carry.
  int max_value_bytes = 64 << 20;
  /// Largest key.
  int max_key_bytes = 8 << 10;
  /// TLS: a server with cert_file serves TLS only; a client with ca_file connects with TLS only.
  net::TlsOptions tls;
};

/// EST_JOB_ID when set, else "cluster@<chief_address>": the job id every task of a job
/// derives alike.
std::string DefaultJobId(const std::string& chief_address);

/// EST_JOB_TOKEN, or "" when it is not set.
std::string JobTokenFromEnvironment();

/// TLS from EST_TLS_CA_FILE, EST_TLS_CERT_FILE, EST_TLS_KEY_FILE and
/// EST_TLS_REQUIRE_CLIENT_CERT ("1" or "0"); off when none is set. ConfigError quoting a
/// malformed EST_TLS_REQUIRE_CLIENT_CERT.
net::TlsOptions StoreTlsFromEnvironment();

/// The chief's store server. Stops, refusing new calls and ending those in flight, when
/// destroyed.
class GrpcStoreServer {
 public:
  /// Listens on options.host:options.port; CommunicationError naming the address when it
  /// cannot (the port is taken, the host is not this machine's).
  static std::unique_ptr<GrpcStoreServer> Start(const GrpcStoreOptions& options);
  virtual ~GrpcStoreServer() = default;
  /// The port it listens on (the one it picked when given 0).
  virtual uint16_t port() const = 0;
};

/// A client of the chief's store server at options.host:options.port. A call made before
/// the server listens, or while it restarts, is retried with back-off until its deadline.
/// A refused call (wrong job id or token) is a ConfigError naming the store; a wait that
/// runs out is a TimeoutError naming the keys. Thread-safe.
std::shared_ptr<Store> CreateGrpcStore(const GrpcStoreOptions& options);

/// The chief's store as the chief's own rank uses it: the server and a client of it in one
/// Store, which keeps the server running while it lives.
class ServedGrpcStore : public Store {
 public:
  /// The port the server listens on (the one it picked when given 0).
  virtual uint16_t port() const = 0;
};

/// Starts the server (GrpcStoreServer::Start) and connects a client to it.
std::shared_ptr<ServedGrpcStore> ServeGrpcStore(const GrpcStoreOptions& options);

}  // namespace est::distribute
