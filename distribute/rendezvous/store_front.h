#pragma once
/// StoreFront: the chief's public store port. It listens on the chief's configured host
/// only and relays each client to LibTorch's c10d TCPStore server on this machine's
/// loopback, forwarding whole, valid requests only (see store_request.h): a malformed or
/// oversized request, or one a client begins and does not finish, costs the server nothing,
/// and closes that client's connection with a logged warning naming the client and why
/// ("TCP store 10.0.0.1:29500: dropped 10.0.0.7:41230: unknown request type 200 …").
/// Replies travel back unchanged. One thread serves every connection, never blocking on one.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace est::distribute {

/// Options of a StoreFront.
struct StoreFrontOptions {
  /// The address to listen on (every address it resolves to); a wildcard ("0.0.0.0") takes
  /// every interface.
  std::string host = "127.0.0.1";
  /// The port to listen on; 0 picks a free one (see StoreFront::port()).
  uint16_t port = 0;
  /// The port of the c10d TCPStore server that every client is relayed to, on 127.0.0.1.
  uint16_t upstream_port = 0;
  /// A client that sent part of a request and nothing more for this long is dropped; so is
  /// a closed connection whose last bytes cannot be delivered within it.
  std::chrono::milliseconds stall_limit = std::chrono::seconds(2);
};

/// The most reply bytes a client may leave unread before it is dropped (64 MiB).
constexpr size_t kMaxStoreFrontReplyBacklog = size_t{64} << 20;

/// A running front: listening from construction, relaying on a thread of its own until
/// destroyed. Not copyable.
class StoreFront {
 public:
  /// Listens on `options.host`:`options.port` and starts relaying. Throws CommunicationError
  /// naming host:port when the host does not resolve or the port cannot be bound (in use).
  explicit StoreFront(const StoreFrontOptions& options);
  /// Stops the thread and closes the listening sockets and every connection (bounded: it
  /// waits for nothing but the thread's current pass).
  ~StoreFront();
  StoreFront(const StoreFront&) = delete;
  StoreFront& operator=(const StoreFront&) = delete;

  /// The port it listens on: on a front created with port 0, the one it picked.
  uint16_t port() const;

 private:
  class Relay;
  std::unique_ptr<Relay> relay_;
};

}  // namespace est::distribute
