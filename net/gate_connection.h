#pragma once
/// One connection through a ConnectionGate: the peer's socket and, once it opened as a gRPC
/// client's does, the server's, with the bytes read from one side and not yet written to the
/// other. The gate's thread alone touches it.

#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace est::net {

/// What the first bytes of a connection say.
enum class Opening { kIncomplete, kGrpc, kGarbage };

/// Whether `bytes`, the first a connection sent, open as a gRPC client's would: HTTP/2's
/// preface over plain TCP, a TLS handshake record under `tls`.
Opening CheckOpening(const std::string& bytes, bool tls);

/// "ipv4:10.0.0.2:41234" as gRPC names a peer, and the address alone in `host`.
std::string PeerText(const sockaddr_storage& address, std::string* host);

/// Bytes read from one side of a connection and not yet written to the other.
class PendingBytes {
 public:
  /// The most a buffer holds: a side is not read while the other's buffer is full.
  static constexpr size_t kLimit = 256 << 10;
  /// Bytes waiting.
  size_t size() const { return data_.size() - offset_; }
  /// The first of them.
  const char* data() const { return data_.data() + offset_; }
  /// Queues `count` bytes.
  void append(const char* bytes, size_t count);
  /// Drops the first `count` bytes (written).
  void consume(size_t count);

 private:
  std::string data_;
  size_t offset_ = 0;
};

/// A side of a connection.
enum class Side { kClient, kServer };

/// One connection: the peer's socket, and once it opened as gRPC does, the server's.
struct GateConnection {
  std::string peer;  ///< "ipv4:10.0.0.2:41234"
  std::string host;  ///< the peer's address alone: what the per-peer limit counts
  std::chrono::steady_clock::time_point deadline;  ///< when it must have opened by
  int client = -1;
  int server = -1;
  std::string name;  ///< the abstract Unix address of its socket to the server
  std::string opening;  ///< what it sent before it was forwarded
  PendingBytes to_server;
  PendingBytes to_client;
  uint32_t client_events = 0;  ///< registered with epoll
  uint32_t server_events = 0;

  /// Whether it is connected to the server.
  bool forwarded() const { return server >= 0; }
  /// Serves epoll's `events` of side `from` of a forwarded connection: writes what waits for
  /// that side, reads what it sent into the other side's buffer (up to kLimit) and writes it on.
  /// False when the connection is done (closed, failed).
  bool relay(Side from, uint32_t events);
  /// The epoll events `side` waits for now: reading while the other side's buffer has room
  /// (always, before the connection is forwarded), writing while its own has bytes.
  uint32_t interest(Side side) const;
};

}  // namespace est::net
