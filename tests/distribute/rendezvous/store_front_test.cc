// The chief's store front: LibTorch's own c10d client through it, where it listens, what it
// relays and whom it drops.

#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/version.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "distribute/rendezvous/store.h"
#include "distribute/rendezvous/store_front.h"
#include "distribute/rendezvous/store_request.h"
#include "tests/distribute/raw_connection.h"
#include "tests/log_capture.h"
#include "tests/test_util.h"

using namespace est::distribute;
using namespace std::chrono_literals;
using est::testing::RawConnection;
using est::testing::TryConnect;
using est::testing::BuildProtocol;
using est::testing::OpeningBytes;
using est::testing::RequestBytes;
using est::testing::TypeByte;
using est::testing::Uint64Bytes;
using Type = est::distribute::StoreRequestType;

namespace {

std::shared_ptr<TcpStore> Server(const std::string& host = "127.0.0.1") {
  TcpStoreOptions options;
  options.host = host;
  options.is_server = true;
  options.timeout = 5s;
  return CreateTcpStore(options);
}

std::vector<uint8_t> Bytes(const std::string& text) { return {text.begin(), text.end()}; }

// The ports of this process's listening TCP sockets bound to every interface.
std::set<uint16_t> WildcardListeningPorts() {
  std::set<uint16_t> ports;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    const int fd = std::atoi(entry.path().filename().c_str());
    int listening = 0;
    socklen_t length = sizeof(listening);
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) != 0 || listening == 0) continue;
    sockaddr_storage address{};
    length = sizeof(address);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) continue;
    if (address.ss_family == AF_INET6) {
      const auto& in6 = reinterpret_cast<const sockaddr_in6&>(address);
      if (IN6_IS_ADDR_UNSPECIFIED(&in6.sin6_addr)) ports.insert(ntohs(in6.sin6_port));
    } else if (address.ss_family == AF_INET) {
      const auto& in = reinterpret_cast<const sockaddr_in&>(address);
      if (in.sin_addr.s_addr == htonl(INADDR_ANY)) ports.insert(ntohs(in.sin_port));
    }
  }
  return ports;
}

}  // namespace

TEST_CASE("Every request LibTorch's c10d client sends passes the chief's store front", "[distribute]") {
  auto server = Server();
  c10d::TCPStoreOptions options;
  options.port = server->port();
  options.isServer = false;
  options.waitWorkers = false;
  options.timeout = 5s;
  c10d::TCPStore client("127.0.0.1", options);

  const std::vector<uint8_t> value{'v', 0, 'w'};
  client.set("a", value);
  CHECK(client.get("a") == value);
  CHECK(client.compareSet("a", value, Bytes("x")) == Bytes("x"));
  CHECK(client.compareSet("a", Bytes("not it"), Bytes("y")) == Bytes("x"));
  CHECK(client.add("n", 5) == 5);
  CHECK(client.add("n", -2) == 3);
  CHECK(server->get("n", 1s) == "3");
  CHECK(client.check({"a", "n"}));
  CHECK_FALSE(client.check({"a", "absent"}));
  client.wait({"a", "n"}, 1000ms);
  CHECK(client.getNumKeys() == 2);
  CHECK(client.deleteKey("a"));
  CHECK_FALSE(client.deleteKey("a"));
  CHECK(client.getNumKeys() == 1);
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  // append, multi_get, multi_set, and cancel_wait after a wait that times out.
  client.append("log", Bytes("a"));
  client.append("log", Bytes("b"));
  client.multiSet({"m1", "m2"}, {Bytes("1"), Bytes("22")});
  CHECK(client.multiGet({"log", "m2"}) == std::vector<std::vector<uint8_t>>{Bytes("ab"), Bytes("22")});
  CHECK_THROWS(client.wait({"absent"}, 100ms));
  CHECK(client.add("n", 1) == 4);  // the connection still serves after the cancelled wait
#endif
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 8)
  client.queuePush("q", Bytes("first"));
  client.queuePush("q", Bytes("second"));
  CHECK(client.queueLen("q") == 2);
  CHECK(client.queuePop("q", /*block=*/false) == Bytes("first"));
#endif
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 10)
  const std::vector<std::string> keys = client.listKeys();
  CHECK(std::set<std::string>(keys.begin(), keys.end()).count("n") == 1);
#endif
}

TEST_CASE("The chief's store front refuses what its LibTorch's server would mishandle", "[distribute]") {
  auto server = Server();
  est::testing::LogCapture log;
  const std::string dropped =
      "warning: TCP store 127.0.0.1:" + std::to_string(server->port()) + ": dropped ";
  if (BuildProtocol().has(Type::kWatchKey)) {
    // watch_key: a watcher that leaves would break the setter of the key.
    RawConnection watcher(server->port());
    watcher.Send(RequestBytes(Type::kWatchKey, {"/w"}));
    CHECK(watcher.ClosedByServer(1s));
    CHECK_THAT(log.text(), Catch::Contains(dropped + watcher.LocalAddress() + ": watch_key (type 7) is refused"));
    server->set("w", "set");  // c10d would have failed this set on the watcher's closed socket
    CHECK(server->get("w", 1s) == "set");
  }
  if (BuildProtocol().validate_first) {
    // A connection that does not open with validate, one that validates twice, and one with
    // another magic number: libuv's server would keep the first's bytes and close the others.
    const std::string set = RequestBytes(Type::kSet, {"/k", "v"});
    const std::string other_magic = TypeByte(Type::kValidate) + std::string("\x01\x02\x03\x04", 4);
    for (const std::string& bytes : {set, OpeningBytes() + OpeningBytes(), other_magic}) {
      RawConnection stranger(server->port());
      stranger.Send(bytes);
      CHECK(stranger.ClosedByServer(1s));
    }
    CHECK_THAT(log.text(), Catch::Contains(": the connection opened with set (type 1), but c10d of LibTorch "));
    CHECK_THAT(log.text(), Catch::Contains(": validate (type 0) again after the connection's first request"));
    CHECK_THAT(log.text(), Catch::Contains(": validate (type 0) with magic number 0x04030201 (expected 0x3c85f7ce)"));
    server->set("k", "served");
    CHECK(server->get("k", 1s) == "served");
  }
  CHECK_FALSE(log.text().empty());  // every protocol refuses something
}

TEST_CASE("The chief's store front listens on the configured address only", "[distribute]") {
  SECTION("127.0.0.1: another address of this machine is refused at once") {
    auto server = Server("127.0.0.1");
    const auto start = std::chrono::steady_clock::now();
    CHECK(TryConnect("127.0.0.2", server->port()) == "refused");
    CHECK(TryConnect("::1", server->port()) == "refused");
    CHECK(std::chrono::steady_clock::now() - start < 200ms);
    CHECK(TryConnect("127.0.0.1", server->port()) == "connected");
  }
  SECTION("127.0.0.2, a second address of loopback: 127.0.0.1 is refused, and clients of 127.0.0.2 are served") {
    auto server = Server("127.0.0.2");
    CHECK(server->describe() == "TCP store 127.0.0.2:" + std::to_string(server->port()));
    CHECK(TryConnect("127.0.0.1", server->port()) == "refused");
    TcpStoreOptions options;
    options.host = "127.0.0.2";
    options.port = server->port();
    options.timeout = 5s;
    CreateTcpStore(options)->set("k", "v");
    CHECK(server->get("k", 1s) == "v");
  }
}

TEST_CASE("The c10d server behind the chief's front takes connections to loopback only", "[distribute]") {
  const std::set<uint16_t> before = WildcardListeningPorts();
  auto server = Server();
  std::vector<uint16_t> added;
  for (uint16_t port : WildcardListeningPorts()) {
    if (before.count(port) == 0) added.push_back(port);
  }
  REQUIRE(added.size() == 1);  // c10d's: the front binds its host's address
  const uint16_t upstream = added.front();
  CHECK(upstream != server->port());
  CHECK(TryConnect("127.0.0.1", upstream) == "connected");
  CHECK(TryConnect("127.0.0.2", upstream) == "timed out");  // the socket filter drops it
  CHECK(TryConnect("::1", upstream) == "timed out");
}

TEST_CASE("The chief's store front relays requests however the bytes are cut", "[distribute]") {
  auto server = Server();
  est::testing::LogCapture log;
  RawConnection raw(server->port());
  raw.Send(OpeningBytes());
  SECTION("one byte at a time") {
    const std::string set = RequestBytes(Type::kSet, {"/k", "slow"});
    for (char byte : set) {
      raw.Send(std::string(1, byte));
      std::this_thread::sleep_for(5ms);
    }
  }
  SECTION("several requests in one send, the last one cut") {
    const std::string get_num_keys = TypeByte(Type::kGetNumKeys);
    const std::string set = RequestBytes(Type::kSet, {"/k", "slow"});
    raw.Send(RequestBytes(Type::kSet, {"/other", "1"}) + get_num_keys + set.substr(0, 5));
    CHECK(raw.Receive(8, 1s) == Uint64Bytes(1));  // get_num_keys: 1 key so far
    std::this_thread::sleep_for(100ms);
    raw.Send(set.substr(5));
  }
  raw.Send(RequestBytes(Type::kGet, {"/k"}));
  CHECK(raw.Receive(12, 1s) == Uint64Bytes(4) + "slow");
  CHECK(server->get("k", 1s) == "slow");
  CHECK(log.text().empty());
}

TEST_CASE("The chief's store front drops a client that leaves its replies unread", "[distribute]") {
  auto server = Server();
  const uint64_t value_bytes = BuildProtocol().max_value_bytes;
  server->set("big", std::string(value_bytes, 'v'));
  // A set has no reply: its value is stored once a get through the same client finds it,
  // before which the raw gets below could find no key (libuv's server answers them empty).
  REQUIRE(server->get("big", 1s).size() == value_bytes);
  est::testing::LogCapture log;
  RawConnection reader(server->port());
  // Replies of twice the backlog's limit.
  std::string gets = OpeningBytes();
  for (uint64_t i = 0; i < 2 * kMaxStoreFrontReplyBacklog / value_bytes; ++i) {
    gets += RequestBytes(Type::kGet, {"/big"});
  }
  reader.Send(gets);
  std::this_thread::sleep_for(1s);
  CHECK_THAT(log.text(), Catch::Contains("warning: TCP store 127.0.0.1:" + std::to_string(server->port()) +
                                         ": dropped " + reader.LocalAddress() + ": left more than " +
                                         std::to_string(kMaxStoreFrontReplyBacklog) + " bytes of replies unread\n"));
  CHECK(reader.ClosedByServer(2s));
  server->set("k", "v");
  CHECK(server->get("k", 1s) == "v");
}

TEST_CASE("Destroying the chief's store with clients connected and mid-request is quick", "[distribute]") {
  auto server = Server();
  std::vector<std::unique_ptr<RawConnection>> clients;
  for (int i = 0; i < 16; ++i) {
    clients.push_back(std::make_unique<RawConnection>(server->port()));
    if (i % 2 == 0) clients.back()->Send(OpeningBytes() + TypeByte(Type::kSet) + Uint64Bytes(100) + "abc");
  }
  std::this_thread::sleep_for(50ms);
  const auto start = std::chrono::steady_clock::now();
  server.reset();
  CHECK(std::chrono::steady_clock::now() - start < 500ms);
  for (auto& client : clients) CHECK(client->ClosedByServer(1s));
}

TEST_CASE("A StoreFront reports a port in use, naming it", "[distribute]") {
  auto server = Server();
  StoreFrontOptions options;
  options.port = server->port();
  options.upstream_port = 1;
  CHECK_THROWS_MATCHES(StoreFront(options), est::CommunicationError,
                       est::testing::MessageMatches(Catch::StartsWith(
                           "TCP store 127.0.0.1:" + std::to_string(server->port()) +
                           ": the chief cannot serve its store on port " + std::to_string(server->port()) +
                           " (is another job or program using it?): 127.0.0.1:" + std::to_string(server->port()) +
                           ": Address already in use")));
  options.host = "no-such-host.invalid";
  options.port = 0;
  CHECK_THROWS_MATCHES(StoreFront(options), est::CommunicationError,
                       est::testing::MessageMatches(Catch::StartsWith(
                           "TCP store no-such-host.invalid:0: cannot resolve the chief's host 'no-such-host.invalid'")));
}
