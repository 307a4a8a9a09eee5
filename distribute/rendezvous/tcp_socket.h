#pragma once
/// TCP sockets as the chief's store front uses them: owned descriptors, listening on the
/// addresses of one host, a non-blocking connection to this machine's loopback, and a
/// peer's address in words.

#include <sys/socket.h>

#include <cstdint>
#include <chrono>
#include <string>
#include <vector>

namespace est::distribute {

/// A file descriptor that is closed with its owner. Move-only; -1 owns nothing.
class UniqueFd {
 public:
  UniqueFd() = default;
  /// Takes ownership of `fd` (-1: none).
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd();
  UniqueFd(UniqueFd&& other) noexcept;
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  /// The descriptor, still owned; -1 when none.
  int get() const { return fd_; }

 private:
  int fd_ = -1;
};

/// Non-blocking listening sockets on every address `host` resolves to, all on one port:
/// `port`, or a free one when `port` is 0; `bound_port` receives it. A wildcard host
/// ("0.0.0.0", "::") listens on every interface. An address that cannot be bound for want of
/// that address family or interface is skipped while another can be. Throws
/// CommunicationError naming host:port when `host` does not resolve, the port is in use, or
/// no address can be bound.
std::vector<UniqueFd> ListenOn(const std::string& host, uint16_t port, uint16_t& bound_port);

/// A non-blocking TCP socket connecting (or connected) to 127.0.0.1:`port`; -1 with `error`
/// set to the reason when the connection cannot even begin.
UniqueFd ConnectToLoopback(uint16_t port, std::string& error);

/// Throws CommunicationError within about `patience` when a client cannot reach
/// `host`:`port`: at once when `host` does not resolve, and when the network refuses
/// every address it resolves to (no route: ENETUNREACH, EHOSTUNREACH, EADDRNOTAVAIL) for
/// all of `patience`. A host that accepts, refuses the port (its server not up yet) or does
/// not answer in time passes: the caller's own wait covers those.
void CheckReachable(const std::string& host, uint16_t port, std::chrono::milliseconds patience);

/// "10.0.0.7:41230" or "[fe80::1]:41230".
std::string DescribeSocketAddress(const sockaddr_storage& address);

}  // namespace est::distribute
