#include "net/listen_socket.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace est::net {
namespace {

/// Closes every socket of `fds`.
void CloseAll(const std::vector<int>& fds) {
  for (int fd : fds) ::close(fd);
}

/// `address` with its port set to `port`.
void SetPort(sockaddr* address, uint16_t port) {
  if (address->sa_family == AF_INET) reinterpret_cast<sockaddr_in*>(address)->sin_port = htons(port);
  if (address->sa_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(address)->sin6_port = htons(port);
}

}  // namespace

std::string BareHost(const std::string& host) {
  return host.size() > 2 && host.front() == '[' && host.back() == ']' ? host.substr(1, host.size() - 2) : host;
}

std::string HostPort(const std::string& host, uint16_t port) {
  const std::string bare = BareHost(host);
  return (bare.find(':') != std::string::npos ? "[" + bare + "]" : bare) + ":" + std::to_string(port);
}

std::string BindFailure(int error, const std::string& host, uint16_t port) {
  if (error == EADDRINUSE) return "port " + std::to_string(port) + " is taken: another process listens there";
  if (error == EADDRNOTAVAIL) return "'" + BareHost(host) + "' is not an address of this machine; use one of its own";
  if (error == EACCES) return "port " + std::to_string(port) + " needs privileges (ports below 1024)";
  return std::string("binding it fails: ") + std::strerror(error);
}

uint16_t BoundPort(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return 0;
  if (address.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
  if (address.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
  return 0;
}

namespace {

/// Listening sockets at host:port, or why there are none.
struct Listening {
  std::vector<int> fds;
  std::string why;
};

Listening TryListen(const std::string& host, uint16_t port) {
  const std::string bare = BareHost(host);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (const int error = ::getaddrinfo(bare.c_str(), std::to_string(port).c_str(), &hints, &found); error != 0)
    return {{}, "the host '" + bare + "' does not resolve (" + ::gai_strerror(error) + "); use a name or address of this machine"};
  bool any_ipv4 = false;
  for (addrinfo* candidate = found; candidate != nullptr; candidate = candidate->ai_next)
    any_ipv4 = any_ipv4 || candidate->ai_family == AF_INET;
  Listening listening;
  uint16_t picked = port;
  for (addrinfo* candidate = found; candidate != nullptr; candidate = candidate->ai_next) {
    if (candidate->ai_family != AF_INET && candidate->ai_family != AF_INET6) continue;
    const int fd = ::socket(candidate->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));  // as gRPC sets it
    // A dual-stack IPv6 socket would take the IPv4 address another socket of this host binds.
    if (candidate->ai_family == AF_INET6 && any_ipv4) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    SetPort(candidate->ai_addr, picked);
    if (::bind(fd, candidate->ai_addr, candidate->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      listening.why = BindFailure(errno, host, picked);
      ::close(fd);
      CloseAll(listening.fds);
      listening.fds.clear();
      break;
    }
    if (picked == 0) picked = BoundPort(fd);
    listening.fds.push_back(fd);
  }
  ::freeaddrinfo(found);
  if (listening.fds.empty() && listening.why.empty()) listening.why = "the host resolves to no IPv4 or IPv6 address";
  return listening;
}

}  // namespace

std::vector<int> ListenTcp(const std::string& host, uint16_t port, const std::string& what) {
  Listening listening = TryListen(host, port);
  EST_CHECK(!listening.fds.empty(), CommunicationError, "cannot serve ", what, " at ", HostPort(host, port), ": ",
            listening.why);
  return std::move(listening.fds);
}

std::string WhyCannotListen(const std::string& host, uint16_t port) {
  Listening listening = TryListen(host, port);
  CloseAll(listening.fds);
  return listening.fds.empty() ? listening.why : "gRPC could not listen there";
}

}  // namespace est::net
