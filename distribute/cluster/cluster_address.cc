#include "distribute/cluster/cluster_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "common/error.h"

namespace est::distribute {
namespace {

bool HasSpace(const std::string& text) {
  return std::any_of(text.begin(), text.end(), [](unsigned char c) { return std::isspace(c) != 0; });
}

/// Closes a socket descriptor when it goes out of scope.
class SocketCloser {
 public:
  explicit SocketCloser(int fd) : fd_(fd) {}
  ~SocketCloser() { ::close(fd_); }
  SocketCloser(const SocketCloser&) = delete;
  SocketCloser& operator=(const SocketCloser&) = delete;

 private:
  int fd_;
};

}  // namespace

int ParsePort(const std::string& text, const std::string& what) {
  int port = 0;
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, port);
  bool digits_only = !text.empty() && std::isdigit(static_cast<unsigned char>(text.front()));
  EST_CHECK(digits_only && error == std::errc() && stop == end && port >= 1 && port <= 65535, ConfigError, what,
            ": port \"", text, "\" is not a number in [1, 65535]");
  return port;
}

HostPort ParseHostPort(const std::string& address, const std::string& what) {
  // A host name has at most 253 characters (RFC 1035), an address a port and brackets more.
  constexpr size_t kMaxAddress = 253 + 2 + 6;
  EST_CHECK(address.size() <= kMaxAddress, ConfigError, what, ": address \"", address.substr(0, 64), "...\" (",
            address.size(), " characters) is not \"host:port\": a host name has at most 253 characters");
  auto colon = address.rfind(':');
  EST_CHECK(colon != std::string::npos, ConfigError, what, ": address \"", address,
            "\" is not \"host:port\" (no port)");
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    in6_addr ipv6{};
    EST_CHECK(::inet_pton(AF_INET6, host.c_str(), &ipv6) == 1, ConfigError, what, ": address \"", address,
              "\" is not \"host:port\" (\"", host, "\" in brackets is not an IPv6 address)");
  } else {
    EST_CHECK(host.find(':') == std::string::npos, ConfigError, what, ": address \"", address,
              "\" is not \"host:port\" (an IPv6 host goes in brackets: \"[::1]:2222\")");
  }
  EST_CHECK(!host.empty() && !HasSpace(host) && host.find_first_of("[]") == std::string::npos, ConfigError, what,
            ": address \"", address, "\" is not \"host:port\" (bad host \"", host, "\")");
  HostPort result;
  result.host = host;
  result.port = ParsePort(address.substr(colon + 1), what + " address \"" + address + "\"");
  return result;
}

int DefaultMasterPort(const Environment& env) {
  if (const std::optional<std::string> master_port = env("MASTER_PORT"))
    return ParsePort(*master_port, "environment variable MASTER_PORT=\"" + *master_port + "\"");
  if (const std::optional<std::string> job_id = env("SLURM_JOB_ID")) {
    const bool digits = !job_id->empty() && std::all_of(job_id->begin(), job_id->end(), [](unsigned char c) {
      return std::isdigit(c) != 0;
    });
    EST_CHECK(digits, ConfigError, "environment variable SLURM_JOB_ID=\"", *job_id,
              "\" is not a job number (the chief's port derives from it where MASTER_PORT is not set)");
    return 15000 + std::stoi(job_id->substr(job_id->size() - std::min<size_t>(job_id->size(), 4)));
  }
  return 29500;
}

std::string JoinHostPort(const std::string& host, int port) {
  bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr ipv4{};
  return ::inet_pton(AF_INET, host.c_str(), &ipv4) == 1 && (ntohl(ipv4.s_addr) >> 24) == 127;
}

std::optional<std::string> LocalAddressToward(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return std::nullopt;
  std::optional<std::string> local;
  for (addrinfo* candidate = found; candidate != nullptr && !local; candidate = candidate->ai_next) {
    int fd = ::socket(candidate->ai_family, candidate->ai_socktype, candidate->ai_protocol);
    if (fd < 0) continue;
    SocketCloser closer(fd);
    sockaddr_storage bound{};
    socklen_t length = sizeof(bound);
    if (::connect(fd, candidate->ai_addr, candidate->ai_addrlen) != 0) continue;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) continue;
    char text[INET6_ADDRSTRLEN] = {};
    const void* address = bound.ss_family == AF_INET6
                              ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&bound)->sin6_addr)
                              : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&bound)->sin_addr);
    if (::inet_ntop(bound.ss_family, address, text, sizeof(text)) != nullptr) local = text;
  }
  ::freeaddrinfo(found);
  return local;
}

}  // namespace est::distribute
