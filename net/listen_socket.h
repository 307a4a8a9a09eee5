#pragma once
/// Listening TCP sockets bound the way gRPC binds a server's address, and the text that says
/// why an address cannot be listened at (the host does not resolve, is not this machine's,
/// the port is taken or privileged).

#include <cstdint>
#include <string>
#include <vector>

namespace est::net {

/// Non-blocking listening sockets at host:port, one per address `host` resolves to (an IPv6
/// literal may come in brackets), all on the port the first one picks when `port` is 0.
/// CommunicationError "cannot serve <what> at <host:port>: <why>" when it cannot listen.
std::vector<int> ListenTcp(const std::string& host, uint16_t port, const std::string& what);

/// Why a server cannot listen at host:port, found by listening there as ListenTcp would;
/// "gRPC could not listen there" when it can.
std::string WhyCannotListen(const std::string& host, uint16_t port);

/// The port a listening socket is bound to.
uint16_t BoundPort(int fd);

/// Why binding host:port failed with `error` (an errno): "port 29500 is taken: another
/// process listens there", "'192.0.2.1' is not an address of this machine; …".
std::string BindFailure(int error, const std::string& host, uint16_t port);

/// The host as getaddrinfo takes it: an IPv6 literal without its brackets.
std::string BareHost(const std::string& host);

/// "host:port", an IPv6 literal in brackets ("[::1]:29500"): the form logs and gRPC take.
std::string HostPort(const std::string& host, uint16_t port);

}  // namespace est::net
