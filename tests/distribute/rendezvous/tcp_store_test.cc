// The TCP store: a real c10d TCPStore server on an ephemeral port of this machine.

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "common/error.h"
#include "distribute/rendezvous/store.h"
#include "distribute/rendezvous/store_request.h"
#include "tests/distribute/rank_threads.h"
#include "tests/distribute/raw_connection.h"
#include "tests/log_capture.h"
#include "tests/test_util.h"

using namespace est::distribute;
using namespace std::chrono_literals;
using est::testing::MessageMatches;
using est::testing::RawConnection;
using est::testing::BuildProtocol;
using est::testing::OpeningBytes;
using est::testing::RequestBytes;
using est::testing::TypeByte;
using est::testing::Uint64Bytes;
using Type = est::distribute::StoreRequestType;

namespace {

std::shared_ptr<TcpStore> Server() {
  TcpStoreOptions options;
  options.is_server = true;
  options.timeout = 5s;
  return CreateTcpStore(options);
}

std::shared_ptr<TcpStore> Client(uint16_t port, std::chrono::milliseconds timeout = 5s) {
  TcpStoreOptions options;
  options.port = port;
  options.timeout = timeout;
  return CreateTcpStore(options);
}

// A connection's first bytes, then a request "set" announcing a key of `length` bytes.
std::string SetRequestHead(uint64_t length) {
  return est::testing::OpeningBytes() + est::testing::TypeByte(est::distribute::StoreRequestType::kSet) +
         est::testing::Uint64Bytes(length);
}

}  // namespace

TEST_CASE("TCP store serves clients on the port it picked", "[distribute]") {
  auto server = Server();
  REQUIRE(server->port() != 0);
  CHECK(server->host() == "127.0.0.1");
  CHECK(server->describe() == "TCP store 127.0.0.1:" + std::to_string(server->port()));
  auto client = Client(server->port());
  CHECK(client->port() == server->port());

  SECTION("values, counters and checks are shared") {
    client->set("k", std::string("v\0w", 3));
    CHECK(server->get("k", 1s) == std::string("v\0w", 3));
    est::testing::RunRanks<int>(4, [&](int) {
      auto own = Client(server->port());
      for (int i = 0; i < 25; ++i) own->add("n", 1);
      return 0;
    });
    CHECK(client->add("n", 0) == 100);
    CHECK(client->check({"k", "n"}));
    CHECK_FALSE(client->check({"k", "absent"}));
  }

  SECTION("a wait that times out names the missing keys and leaves the connection usable") {
    client->set("here", "1");
    CHECK_THROWS_MATCHES(client->wait({"here", "gone"}, 150ms), est::TimeoutError,
                         MessageMatches(Catch::Contains(server->describe()) && Catch::Contains("key 'gone'") &&
                                        !Catch::Contains("'here'")));
    server->set("gone", "now");
    CHECK(client->add("count", 1) == 1);
    CHECK(client->get("gone", 1s) == "now");
    CHECK(client->check({"gone"}));
  }

  SECTION("a client that starts before the server connects once it is up") {
    const uint16_t port = server->port();
    server.reset();
    client.reset();
    std::shared_ptr<TcpStore> late_server;
    std::thread starter([&] {
      std::this_thread::sleep_for(300ms);
      TcpStoreOptions options;
      options.is_server = true;
      options.port = port;
      late_server = CreateTcpStore(options);
    });
    auto early = Client(port, 10s);
    early->set("k", "v");
    starter.join();
    CHECK(late_server->get("k", 1s) == "v");
  }

  SECTION("a lost server becomes a CommunicationError naming the store") {
    const std::string where = server->describe();
    server.reset();
    CHECK_THROWS_MATCHES(client->add("n", 1), est::CommunicationError,
                         MessageMatches(Catch::Contains(where) && Catch::Contains("key 'n'")));
  }
}

TEST_CASE("A chief host that does not resolve or has no route is named within seconds", "[distribute]") {
  TcpStoreOptions options;
  options.port = 1234;
  options.timeout = std::chrono::seconds(60);
  SECTION("a name that does not resolve: at once") {
    options.host = "no-such-host.invalid";
    const auto start = std::chrono::steady_clock::now();
    CHECK_THROWS_MATCHES(CreateTcpStore(options), est::CommunicationError,
                         MessageMatches(Catch::StartsWith("TCP store no-such-host.invalid:1234: the chief's host "
                                                          "'no-such-host.invalid' does not resolve: ") &&
                                        Catch::EndsWith(" (is TF_CONFIG's chief address right?)")));
    CHECK(std::chrono::steady_clock::now() - start < 2s);
  }
  SECTION("an address the network has no route to: after 3 s") {
    options.host = "255.255.255.255";  // TCP to the broadcast address: ENETUNREACH
    const auto start = std::chrono::steady_clock::now();
    CHECK_THROWS_MATCHES(CreateTcpStore(options), est::CommunicationError,
                         MessageMatches(Catch::Equals("TCP store 255.255.255.255:1234: the chief's host "
                                                      "'255.255.255.255' is unreachable from here (255.255.255.255:1234: "
                                                      "Network is unreachable) for 3000 ms (is TF_CONFIG's chief "
                                                      "address right?)")));
    const auto took = std::chrono::steady_clock::now() - start;
    CHECK(took >= 3s);
    CHECK(took < 6s);
  }
}

TEST_CASE("TCP store reports where it cannot serve or connect", "[distribute]") {
  auto server = Server();
  const std::string port = std::to_string(server->port());
  TcpStoreOptions second;
  second.is_server = true;
  second.port = server->port();
  CHECK_THROWS_MATCHES(CreateTcpStore(second), est::CommunicationError,
                       MessageMatches(Catch::Contains("127.0.0.1:" + port) && Catch::Contains("serve")));
  const uint16_t closed_port = server->port();
  server.reset();
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_MATCHES(Client(closed_port, 1s), est::CommunicationError,
                       MessageMatches(Catch::Contains("127.0.0.1:" + port) && Catch::Contains("cannot connect")));
  CHECK(std::chrono::steady_clock::now() - start < 3s);
  TcpStoreOptions no_port;
  CHECK_THROWS_AS(CreateTcpStore(no_port), est::ConfigError);
}

TEST_CASE("The chief's TCP store drops malformed requests with a warning and keeps serving its clients",
          "[distribute]") {
  auto server = Server();
  auto client = Client(server->port());
  est::testing::LogCapture log;
  RawConnection stranger(server->port());
  std::string reason;
  std::chrono::milliseconds drop_after{0};  // the least time before the drop

  SECTION("garbage bytes") {
    std::string garbage;
    for (int i = 0; i < 64; ++i) garbage.push_back(static_cast<char>(i * 37 + 11));
    stranger.Send(garbage);
    // Why depends on the protocol (ScanStoreRequest's messages are tested on their own).
    const StoreRequestScan scan = ScanStoreRequest(BuildProtocol(), garbage.data(), garbage.size(), true);
    REQUIRE(scan.status == StoreRequestScan::Status::kInvalid);
    reason = scan.error;
  }
  const std::string last_type = std::to_string(BuildProtocol().types.size() - 1);
  const std::string max_keys = std::to_string(BuildProtocol().max_keys);
  SECTION("an unknown request type") {
    stranger.Send(std::string(1, static_cast<char>(200)));
    reason = "unknown request type 200 (expected 0 to " + last_type + ")";
  }
  SECTION("a length prefix larger than any memory") {
    stranger.Send(SetRequestHead(uint64_t{1} << 40));
    reason = "a key of 1099511627776 bytes (expected at most " + std::to_string(BuildProtocol().max_key_bytes) + ")";
  }
  SECTION("a value longer than the limit") {
    const uint64_t limit = BuildProtocol().max_value_bytes;
    stranger.Send(OpeningBytes() + RequestBytes(Type::kSet, {"/k"}) + Uint64Bytes(limit + 1) + "abc");
    reason = "a value of " + std::to_string(limit + 1) + " bytes (expected at most " + std::to_string(limit) + ")";
  }
  SECTION("a check of more keys than the limit") {
    stranger.Send(OpeningBytes() + TypeByte(Type::kCheck) + Uint64Bytes(uint64_t{1} << 32));
    reason = "a list of 4294967296 keys (expected at most " + max_keys + ")";
  }
  SECTION("a request cut short by a sender that stays connected") {
    stranger.Send(SetRequestHead(100) + "abc");
    reason = "sent 12 bytes of a request and nothing more for 2000 ms";
    drop_after = 1900ms;
  }
  SECTION("a request cut short by a sender that closes its connection") {
    {
      RawConnection quitter(server->port());
      quitter.Send(SetRequestHead(100) + "abc");
      reason = quitter.LocalAddress() + " closed its connection in the middle of a request (12 bytes of it sent)";
    }
    std::this_thread::sleep_for(300ms);
    CHECK_THAT(log.text(), Catch::Contains("warning: TCP store 127.0.0.1:" + std::to_string(server->port()) + ": " +
                                           reason));
    client->set("k", "v");
    CHECK(server->get("k", 1s) == "v");
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  // While the stranger is connected (and, for the stalled one, waited for), the others are
  // served at once, a new connection included.
  client->set("k", "v");
  CHECK(server->get("k", 1s) == "v");
  CHECK(client->add("n", 2) == 2);
  CHECK(Client(server->port())->add("n", 1) == 3);
  const auto served_in = std::chrono::steady_clock::now() - start;
  CHECK(served_in < 300ms);
  CHECK(stranger.ClosedByServer(4s));
  const auto dropped_in = std::chrono::steady_clock::now() - start;
  CHECK(dropped_in >= drop_after);
  CHECK(dropped_in < drop_after + 1s);
  CHECK_THAT(log.text(), Catch::Contains("warning: TCP store 127.0.0.1:" + std::to_string(server->port()) +
                                         ": dropped " + stranger.LocalAddress() + ": " + reason + "\n"));
  CHECK(client->add("n", 1) == 4);
}
