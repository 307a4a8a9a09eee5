#include "distribute/rendezvous/tcp_socket.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "common/error.h"

namespace est::distribute {
namespace {

// The IPv4 and IPv6 addresses `host` resolves to, with `port`; none, with `why` set, when
// it does not resolve to any.
std::vector<sockaddr_storage> ResolveTcp(const std::string& host, uint16_t port, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int status = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  std::vector<sockaddr_storage> addresses;
  if (status != 0) {
    why = status == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(status);
    return addresses;
  }
  for (const addrinfo* entry = found; entry != nullptr; entry = entry->ai_next) {
    if (entry->ai_family != AF_INET && entry->ai_family != AF_INET6) continue;
    sockaddr_storage address{};
    std::memcpy(&address, entry->ai_addr, entry->ai_addrlen);
    addresses.push_back(address);
  }
  ::freeaddrinfo(found);
  if (addresses.empty()) why = "it resolves to no IPv4 or IPv6 address";
  return addresses;
}

// The addresses `host` resolves to, each with port 0, for listening on `port`.
std::vector<sockaddr_storage> Resolve(const std::string& host, uint16_t port) {
  std::string why;
  std::vector<sockaddr_storage> addresses = ResolveTcp(host, 0, why);
  EST_CHECK(!addresses.empty(), CommunicationError, "TCP store ", host, ":", port, ": cannot resolve the chief's host '",
            host, "' to listen on it: ", why);
  return addresses;
}

void SetPort(sockaddr_storage& address, uint16_t port) {
  if (address.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in&>(address).sin_port = htons(port);
  } else {
    reinterpret_cast<sockaddr_in6&>(address).sin6_port = htons(port);
  }
}

socklen_t Length(const sockaddr_storage& address) {
  return address.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
}

// A listening socket on `address`, or -1 with errno set.
UniqueFd Listen(const sockaddr_storage& address) {
  UniqueFd fd(::socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return fd;
  // Restarting on the port of a server that just stopped: its old connections linger in
  // TIME_WAIT. (On Linux this never lets two sockets listen on one port.)
  const int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), Length(address)) != 0 ||
      ::listen(fd.get(), SOMAXCONN) != 0) {
    const int error = errno;
    fd = UniqueFd();
    errno = error;
  }
  return fd;
}

uint16_t PortOf(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  return address.ss_family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in&>(address).sin_port)
                                      : ntohs(reinterpret_cast<sockaddr_in6&>(address).sin6_port);
}

}  // namespace

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

UniqueFd::UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

std::vector<UniqueFd> ListenOn(const std::string& host, uint16_t port, uint16_t& bound_port) {
  std::vector<sockaddr_storage> addresses = Resolve(host, port);
  // A free port picked on the first address may be taken on the next: pick again.
  constexpr int kAttempts = 8;
  for (int attempt = 1;; ++attempt) {
    std::vector<UniqueFd> listeners;
    uint16_t chosen = port;
    std::string last_error;
    bool port_taken = false;
    for (sockaddr_storage& address : addresses) {
      SetPort(address, chosen);
      UniqueFd fd = Listen(address);
      if (fd.get() < 0) {
        port_taken = port_taken || errno == EADDRINUSE;
        last_error = DescribeSocketAddress(address) + ": " + std::strerror(errno);
        if (port_taken) break;
        continue;
      }
      if (chosen == 0) chosen = PortOf(fd.get());
      listeners.push_back(std::move(fd));
    }
    if (port_taken && port == 0 && attempt < kAttempts) continue;
    EST_CHECK(!port_taken, CommunicationError, "TCP store ", host, ":", port,
              ": the chief cannot serve its store on port ", port, " (is another job or program using it?): ",
              last_error);
    EST_CHECK(!listeners.empty(), CommunicationError, "TCP store ", host, ":", port,
              ": the chief cannot serve its store on any address of '", host, "': ", last_error);
    bound_port = chosen;
    return listeners;
  }
}

UniqueFd ConnectToLoopback(uint16_t port, std::string& error) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) {
    error = std::strerror(errno);
    return fd;
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0 &&
      errno != EINPROGRESS) {
    error = std::strerror(errno);
    return UniqueFd();
  }
  return fd;
}

namespace {

// How a non-blocking connection attempt to `address` ends within `limit`: 0 when it
// connected, was refused or is still pending; otherwise the errno of the network's refusal.
int ProbeConnect(const sockaddr_storage& address, std::chrono::milliseconds limit) {
  UniqueFd fd(::socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return errno;
  const socklen_t length = address.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), length) == 0) return 0;
  if (errno != EINPROGRESS) return errno == ECONNREFUSED ? 0 : errno;
  pollfd waiting{fd.get(), POLLOUT, 0};
  if (::poll(&waiting, 1, static_cast<int>(limit.count())) <= 0) return 0;  // no answer yet
  int error = 0;
  socklen_t size = sizeof(error);
  ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &size);
  return error == ECONNREFUSED ? 0 : error;
}

bool NoRoute(int error) { return error == ENETUNREACH || error == EHOSTUNREACH || error == EADDRNOTAVAIL; }

}  // namespace

void CheckReachable(const std::string& host, uint16_t port, std::chrono::milliseconds patience) {
  std::string why;
  const std::vector<sockaddr_storage> addresses = ResolveTcp(host, port, why);
  EST_CHECK(!addresses.empty(), CommunicationError, "the chief's host '", host, "' does not resolve: ", why);
  const auto end = std::chrono::steady_clock::now() + patience;
  std::string refusals;
  while (true) {
    refusals.clear();
    for (const sockaddr_storage& address : addresses) {
      const int error = ProbeConnect(address, std::chrono::milliseconds(500));
      if (!NoRoute(error)) return;
      refusals += (refusals.empty() ? "" : ", ") + DescribeSocketAddress(address) + ": " + std::strerror(error);
    }
    if (std::chrono::steady_clock::now() >= end) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EST_THROW(CommunicationError, "the chief's host '", host, "' is unreachable from here (", refusals, ") for ",
            patience.count(), " ms");
}

std::string DescribeSocketAddress(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (address.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(address);
    ::inet_ntop(AF_INET, &in.sin_addr, text, sizeof(text));
    return std::string(text) + ":" + std::to_string(ntohs(in.sin_port));
  }
  if (address.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(address);
    ::inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof(text));
    return "[" + std::string(text) + "]:" + std::to_string(ntohs(in6.sin6_port));
  }
  return "an address of family " + std::to_string(address.ss_family);
}

}  // namespace est::distribute
