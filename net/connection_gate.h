#pragma once
/// ConnectionGate: what stands between the network and a job's gRPC server. It accepts the
/// TCP connections at the server's address itself and forwards to the server, over a Unix
/// socket in a directory only this user can enter, only connections that open the way gRPC
/// does (the HTTP/2 preface, or a TLS handshake record) within `opening_timeout`. A
/// connection its peer closed is closed at once; one address holds at most
/// `max_connections_per_peer` connections and all peers `max_connections`, where the oldest
/// connection that has not yet opened makes room for a new one; when the process runs out
/// of file descriptors, new connections are refused, not left queued. So a flood of
/// connections from one address cannot keep the job's own tasks from its server.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace est::net {

/// The limits of a ConnectionGate, and what its connections must open with.
struct ConnectionGateOptions {
  /// Connections held at once by all peers. A quarter of the process's file limit
  /// (RLIMIT_NOFILE) caps it: each forwarded connection costs three descriptors.
  size_t max_connections = 4096;
  /// Connections held at once by one peer address, at most half of max_connections. Tasks
  /// that share a host share it.
  size_t max_connections_per_peer = 1024;
  /// How long a new connection may take to send its opening bytes.
  std::chrono::milliseconds opening_timeout = std::chrono::seconds(5);
  /// Whether connections open with a TLS handshake record (true) or the HTTP/2 preface.
  bool tls = false;

  ConnectionGateOptions& with_max_connections(size_t count) {
    max_connections = count;
    return *this;
  }
  ConnectionGateOptions& with_max_connections_per_peer(size_t count) {
    max_connections_per_peer = count;
    return *this;
  }
  ConnectionGateOptions& with_opening_timeout(std::chrono::milliseconds timeout) {
    opening_timeout = timeout;
    return *this;
  }
  ConnectionGateOptions& with_tls(bool on) {
    tls = on;
    return *this;
  }
};

/// What a gate has done since it started.
struct ConnectionGateCounts {
  uint64_t accepted = 0;         ///< connections accepted
  uint64_t forwarded = 0;        ///< connections that opened as gRPC does and reached the server
  uint64_t not_opened = 0;       ///< closed for sending nothing, or too little, in time
  uint64_t garbage = 0;          ///< closed for opening with bytes gRPC does not send
  uint64_t over_limit = 0;       ///< refused, or closed to make room, at a connection limit
  uint64_t out_of_files = 0;     ///< refused because the process had no file descriptor left
  size_t open = 0;               ///< connections held now
};

/// The front of one gRPC server.
class ConnectionGate {
 public:
  /// Listens at host:port (0: a free port) for `what` ("the job's store"), forwarding
  /// nothing until open(). CommunicationError "cannot serve <what> at <address>: <why>"
  /// when it cannot listen there; IoError when it cannot make its Unix socket's directory.
  static std::unique_ptr<ConnectionGate> Listen(const std::string& host, uint16_t port, const std::string& what,
                                                ConnectionGateOptions options);
  /// Stops: closes its port and every connection, and removes its Unix socket's directory.
  virtual ~ConnectionGate() = default;

  /// Where the server must listen: "unix:<path>", as gRPC takes it.
  virtual std::string server_address() const = 0;
  /// Starts accepting and forwarding; the server listens at server_address() by now.
  virtual void open() = 0;
  /// The TCP port it listens on (the one it picked when given 0).
  virtual uint16_t port() const = 0;
  /// The peer ("ipv4:10.0.0.2:41234") of the connection the server knows as `server_peer`
  /// (gRPC's peer of a call); `server_peer` itself when no connection of the gate is it.
  virtual std::string peer_of(const std::string& server_peer) const = 0;
  /// What it has done so far.
  virtual ConnectionGateCounts counts() const = 0;
};

}  // namespace est::net
