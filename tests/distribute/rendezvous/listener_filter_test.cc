// Confining a listener bound to every interface to one host's addresses, and limiting the
// I/O time of the connections it accepts (c10d's server behind the chief's store front).

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "common/error.h"
#include "distribute/rendezvous/listener_filter.h"
#include "tests/distribute/raw_connection.h"
#include "tests/test_util.h"

using namespace est::distribute;
using namespace std::chrono_literals;
using est::testing::MessageMatches;

namespace {

// Whether a TCP connection to ip:port opens within `limit` (a dropped SYN never opens one).
bool Connects(const std::string& ip, uint16_t port, std::chrono::milliseconds limit = 400ms) {
  return est::testing::TryConnect(ip, port, limit) == "connected";
}

// A listening socket on every interface (IPv6 and IPv4), as c10d's TCPStore opens; its port.
int WildcardListener(uint16_t& port) {
  const int fd = ::socket(AF_INET6, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  int off = 0;
  REQUIRE(::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) == 0);
  sockaddr_in6 address{};
  address.sin6_family = AF_INET6;
  address.sin6_addr = in6addr_any;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  REQUIRE(::listen(fd, 16) == 0);
  socklen_t length = sizeof(address);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  port = ntohs(address.sin6_port);
  return fd;
}

}  // namespace

TEST_CASE("a listener on every interface confined to a host opens connections to that host only", "[distribute]") {
  uint16_t port = 0;
  const int fd = WildcardListener(port);
  REQUIRE(Connects("127.0.0.2", port));  // every interface, before

  SECTION("an IPv4 address") {
    ConfineListenerToHost(port, "127.0.0.1");
    CHECK(Connects("127.0.0.1", port));
    CHECK_FALSE(Connects("127.0.0.2", port));
    CHECK_FALSE(Connects("::1", port));
  }

  SECTION("an IPv6 address") {
    ConfineListenerToHost(port, "::1");
    CHECK(Connects("::1", port));
    CHECK_FALSE(Connects("127.0.0.1", port));
  }

  SECTION("a host name takes the addresses it resolves to") {
    ConfineListenerToHost(port, "localhost");
    CHECK(Connects("127.0.0.1", port));
    CHECK_FALSE(Connects("127.0.0.2", port));
  }

  SECTION("a wildcard host leaves every interface open") {
    ConfineListenerToHost(port, "0.0.0.0");
    CHECK(Connects("127.0.0.2", port));
  }

  SECTION("a host that does not resolve, or a port without such a listener, is a CommunicationError") {
    CHECK_THROWS_MATCHES(ConfineListenerToHost(port, "no-such-host.invalid"), est::CommunicationError,
                         MessageMatches(Catch::StartsWith("TCP store port " + std::to_string(port) +
                                                          ": cannot resolve the chief's host 'no-such-host.invalid' "
                                                          "to confine the store to it: ")));
    CHECK_THROWS_MATCHES(ConfineListenerToHost(static_cast<uint16_t>(port + 1 == 0 ? 1 : port + 1), "127.0.0.1"),
                         est::CommunicationError,
                         MessageMatches(Catch::EndsWith(": found no listening socket bound to every interface on "
                                                        "that port to confine to '127.0.0.1'")));
  }
  ::close(fd);
}

TEST_CASE("a listener's I/O time limit holds on the connections it accepts", "[distribute]") {
  uint16_t port = 0;
  const int fd = WildcardListener(port);
  LimitListenerIoTime(port, 200ms);
  est::testing::RawConnection client(port);
  const int accepted = ::accept(fd, nullptr, nullptr);
  REQUIRE(accepted >= 0);
  const auto start = std::chrono::steady_clock::now();
  char byte = 0;
  CHECK(::recv(accepted, &byte, 1, 0) == -1);  // the client sends nothing
  CHECK((errno == EAGAIN || errno == EWOULDBLOCK));
  const auto waited = std::chrono::steady_clock::now() - start;
  CHECK(waited >= 180ms);
  CHECK(waited < 1s);
  CHECK_THROWS_MATCHES(LimitListenerIoTime(static_cast<uint16_t>(port + 1 == 0 ? 1 : port + 1), 200ms),
                       est::CommunicationError,
                       MessageMatches(Catch::EndsWith(": found no listening socket bound to every interface on "
                                                      "that port to limit its I/O time")));
  ::close(accepted);
  ::close(fd);
}
