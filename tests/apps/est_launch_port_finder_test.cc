// Port finder: a run of consecutive ports that can be bound, and hosts of this machine only.

#include "apps/est_launch/port_finder.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "common/error.h"
#include "tests/loopback.h"

namespace {

// Binds a TCP socket to 127.0.0.1:port; returns its fd or -1.
int BindLoopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  const sockaddr_in address = est::testing::LoopbackAddress(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0) return fd;
  ::close(fd);
  return -1;
}

}  // namespace

TEST_CASE("FindFreePortRange returns consecutive ports that can be bound", "[launch]") {
  const int first = est_launch::FindFreePortRange("127.0.0.1", 5);
  CHECK(first >= 1);
  CHECK(first + 4 <= 65535);
  std::vector<int> fds;
  for (int port = first; port < first + 5; ++port) fds.push_back(BindLoopback(port));
  for (int fd : fds) {
    CHECK(fd >= 0);
    if (fd >= 0) ::close(fd);
  }

  CHECK_NOTHROW(est_launch::CheckLocalHost("127.0.0.1"));
  CHECK_NOTHROW(est_launch::CheckLocalHost("localhost"));
  CHECK_THROWS_AS(est_launch::CheckLocalHost("203.0.113.7"), est::ConfigError);  // TEST-NET-3: not ours
}
