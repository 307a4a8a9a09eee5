// The gate in front of a job's gRPC server: bytes relayed both ways with back-pressure,
// the peer a call came from, connections that stay silent or open with garbage, the limit per
// address and what makes room under it, and refusing instead of queueing when the process has
// no file descriptor left.

#include "net/connection_gate.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/log_capture.h"
#include "tests/loopback.h"

using namespace est::net;
using namespace std::chrono_literals;

namespace {

const std::string kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

// A blocking TCP connection to 127.0.0.1:port, closed when destroyed.
class Client {
 public:
  explicit Client(uint16_t port) : fd_(est::testing::ConnectToLoopback(port)) {}
  ~Client() { ::close(fd_); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  void send(const std::string& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t count = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      REQUIRE(count > 0);
      sent += static_cast<size_t>(count);
    }
  }
  // Exactly `count` bytes, or fewer when the other side closes first.
  std::string receive(size_t count) {
    std::string bytes(count, '\0');
    size_t received = 0;
    while (received < count) {
      const ssize_t got = ::recv(fd_, bytes.data() + received, count - received, 0);
      if (got <= 0) break;
      received += static_cast<size_t>(got);
    }
    bytes.resize(received);
    return bytes;
  }
  // Whether the gate closed this connection within `timeout`.
  bool closed_within(std::chrono::milliseconds timeout) {
    pollfd watched{fd_, POLLIN, 0};
    if (::poll(&watched, 1, static_cast<int>(timeout.count())) <= 0) return false;
    char byte = 0;
    return ::recv(fd_, &byte, 1, MSG_DONTWAIT) <= 0;
  }
  // "ipv4:127.0.0.1:<this side's port>", as the gate names this connection's peer.
  std::string name() const {
    sockaddr_in local{};
    socklen_t length = sizeof(local);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&local), &length);
    return "ipv4:127.0.0.1:" + std::to_string(ntohs(local.sin_port));
  }

 private:
  int fd_;
};

// The server behind a gate: listens at the gate's Unix socket and echoes what each connection
// sends; names the peers of its connections as gRPC would.
class EchoServer {
 public:
  explicit EchoServer(const std::string& address) : fd_(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    const std::string path = address.substr(std::string("unix:").size());
    sockaddr_un local{};
    local.sun_family = AF_UNIX;
    REQUIRE(path.size() < sizeof(local.sun_path));
    std::copy(path.begin(), path.end(), local.sun_path);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof(local)) == 0);
    REQUIRE(::listen(fd_, 64) == 0);
    accepting_ = std::thread([this] { Accept(); });
  }
  ~EchoServer() {
    ::shutdown(fd_, SHUT_RDWR);
    accepting_.join();
    for (std::thread& echo : echoes_) echo.join();
    ::close(fd_);
  }
  // gRPC's name of the peer of the n-th connection accepted, once it is.
  std::string peer(size_t n) {
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (peers_.size() > n) return peers_[n];
      }
      std::this_thread::sleep_for(10ms);
    }
    return "";
  }

 private:
  void Accept() {
    while (true) {
      sockaddr_un remote{};
      socklen_t length = sizeof(remote);
      const int fd = ::accept(fd_, reinterpret_cast<sockaddr*>(&remote), &length);
      if (fd < 0) return;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        const size_t name_length = length - sizeof(sa_family_t);
        peers_.push_back("unix-abstract:" + std::string(remote.sun_path + 1, name_length > 0 ? name_length - 1 : 0));
      }
      echoes_.emplace_back([fd] {
        char buffer[1 << 16];
        for (ssize_t got; (got = ::recv(fd, buffer, sizeof(buffer), 0)) > 0;)
          for (ssize_t sent = 0; sent < got;) {
            const ssize_t count = ::send(fd, buffer + sent, static_cast<size_t>(got - sent), MSG_NOSIGNAL);
            if (count <= 0) break;
            sent += count;
          }
        ::close(fd);
      });
    }
  }

  int fd_;
  std::thread accepting_;
  std::vector<std::thread> echoes_;
  std::mutex mutex_;
  std::vector<std::string> peers_;
};

std::unique_ptr<ConnectionGate> Gate(ConnectionGateOptions options = {}) {
  return ConnectionGate::Listen("127.0.0.1", 0, "the test's server", options);
}

}  // namespace

TEST_CASE("a connection gate relays both ways what a connection that opens as gRPC does sends", "[distribute]") {
  auto gate = Gate();
  EchoServer server(gate->server_address());
  gate->open();
  std::string payload(8 << 20, '\0');  // 32 times the gate's buffer: it must hold back and resume
  std::mt19937 random(7);
  for (char& byte : payload) byte = static_cast<char>(random());
  Client client(gate->port());
  std::thread sender([&] { client.send(kPreface + payload); });
  const std::string echoed = client.receive(kPreface.size() + payload.size());
  sender.join();
  CHECK(echoed.size() == kPreface.size() + payload.size());
  CHECK((echoed == kPreface + payload));
  // The server's peer of the connection is named as the client the gate accepted.
  CHECK(gate->peer_of(server.peer(0)) == client.name());
  CHECK(gate->peer_of("ipv4:10.0.0.9:1") == "ipv4:10.0.0.9:1");
  const ConnectionGateCounts counts = gate->counts();
  CHECK(counts.accepted == 1);
  CHECK(counts.forwarded == 1);
  CHECK(counts.open == 1);
}

TEST_CASE("a connection gate closes connections that stay silent or do not open as gRPC does", "[distribute]") {
  const auto start = std::chrono::steady_clock::now();
  auto gate = Gate(ConnectionGateOptions().with_opening_timeout(1s));
  EchoServer server(gate->server_address());
  gate->open();
  Client silent(gate->port());
  Client cut_short(gate->port());
  cut_short.send(kPreface.substr(0, 10));
  Client garbage(gate->port());
  garbage.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  Client also_silent(gate->port());
  CHECK(garbage.closed_within(500ms));  // at once, not at the timeout
  { Client gone(gate->port()); }
  if (std::chrono::steady_clock::now() - start < 800ms) CHECK_FALSE(silent.closed_within(100ms));
  CHECK(silent.closed_within(3s));
  CHECK(cut_short.closed_within(3s));
  for (int i = 0; i < 200 && gate->counts().open > 0; ++i) std::this_thread::sleep_for(10ms);
  ConnectionGateCounts counts = gate->counts();
  CHECK(counts.garbage == 1);
  CHECK(counts.not_opened == 4);  // three silent (one cut short), and the one its client closed at once
  CHECK(counts.forwarded == 0);

  // A TLS gate takes a handshake record, and refuses the plain preface.
  auto tls_gate = Gate(ConnectionGateOptions().with_tls(true));
  EchoServer tls_server(tls_gate->server_address());
  tls_gate->open();
  Client hello(tls_gate->port());
  const std::string record_header("\x16\x03\x01\x00\x05", 5);
  hello.send(record_header + "hello");
  CHECK(hello.receive(10) == record_header + "hello");
  Client plain(tls_gate->port());
  plain.send(kPreface);
  CHECK(plain.closed_within(1s));
  CHECK(tls_gate->counts().forwarded == 1);
  CHECK(tls_gate->counts().garbage == 1);
}

TEST_CASE("a connection gate holds an address to its limit, closing connections that have not opened to make room",
          "[distribute]") {
  est::testing::LogCapture log;
  auto gate = Gate(ConnectionGateOptions().with_max_connections_per_peer(4));
  EchoServer server(gate->server_address());
  gate->open();
  std::vector<std::unique_ptr<Client>> silent;
  for (int i = 0; i < 4; ++i) silent.push_back(std::make_unique<Client>(gate->port()));
  // A fifth connection takes the place of the oldest silent one.
  Client fifth(gate->port());
  CHECK(silent[0]->closed_within(2s));
  CHECK_FALSE(silent[1]->closed_within(50ms));
  fifth.send(kPreface);
  CHECK(fifth.receive(kPreface.size()) == kPreface);
  // Once all four have opened, none makes room: a new one is refused at once.
  for (int i = 1; i < 4; ++i) {
    silent[i]->send(kPreface);
    CHECK(silent[i]->receive(kPreface.size()) == kPreface);
  }
  Client refused(gate->port());
  CHECK(refused.closed_within(2s));
  CHECK(gate->counts().over_limit == 2);
  CHECK(gate->counts().open == 4);
  CHECK_THAT(log.text(), Catch::Contains("the test's server at 127.0.0.1:" + std::to_string(gate->port()) +
                                         ": 127.0.0.1 holds 4 connections, the most one address may "
                                         "(max_connections_per_peer)"));
  // Those that opened are served as before.
  fifth.send("still here");
  CHECK(fifth.receive(10) == "still here");
}

TEST_CASE("a connection gate refuses connections, not queues them, while the process has no file descriptor left",
          "[distribute]") {
  est::testing::LogCapture log;
  auto gate = Gate();
  EchoServer server(gate->server_address());
  gate->open();
  // The server's threads run before descriptors run out, and this connection stays open
  // until they are given back: nothing closes meanwhile but what the test closes.
  Client before(gate->port());
  before.send(kPreface);
  REQUIRE(before.receive(kPreface.size()) == kPreface);
  // Uses up the process's descriptors, but for the one the client takes. Until they are
  // given back, the test makes system calls only (a sanitizer's checks may need a descriptor).
  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
  rlimit lowered = saved;
  lowered.rlim_cur = 256;
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &lowered) == 0);
  std::vector<int> fillers(256, -1);
  size_t filled = 0;
  while (filled < fillers.size() && (fillers[filled] = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0) ++filled;
  ::close(fillers[--filled]);
  const int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const sockaddr_in address = est::testing::LoopbackAddress(gate->port());
  const bool connected = ::connect(client, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
  pollfd watched{client, POLLIN, 0};
  char byte = 0;
  const bool refused = ::poll(&watched, 1, 2000) == 1 && ::recv(client, &byte, 1, MSG_DONTWAIT) <= 0;
  ::close(client);
  for (size_t i = 0; i < filled; ++i) ::close(fillers[i]);
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &saved) == 0);
  CHECK(connected);
  CHECK(refused);
  CHECK(gate->counts().out_of_files == 1);
  // With descriptors again, connections are taken again.
  Client served(gate->port());
  served.send(kPreface);
  CHECK(served.receive(kPreface.size()) == kPreface);
  CHECK_THAT(log.text(), Catch::Contains("refused 1 connection(s) while this process had no file descriptor left "
                                         "(RLIMIT_NOFILE 256)"));
}

TEST_CASE("a connection gate names where it cannot listen", "[distribute]") {
  auto gate = Gate();
  CHECK_THROWS_WITH(ConnectionGate::Listen("127.0.0.1", gate->port(), "the test's server", {}),
                    "cannot serve the test's server at 127.0.0.1:" + std::to_string(gate->port()) + ": port " +
                        std::to_string(gate->port()) + " is taken: another process listens there");
  CHECK_THROWS_WITH(ConnectionGate::Listen("no-such-host.invalid", 0, "the test's server", {}),
                    Catch::Contains("the host 'no-such-host.invalid' does not resolve"));
}
