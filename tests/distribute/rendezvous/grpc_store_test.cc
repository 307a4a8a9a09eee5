// The chief's store over gRPC: every Store operation, waits and their timeouts, the job id
// and token checks, a client that starts before its server, and a 16 MB value.

#include "distribute/rendezvous/grpc_store.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "common/error.h"
#include "tests/log_capture.h"
#include "tests/test_util.h"

using namespace est::distribute;
using namespace std::chrono_literals;
using est::testing::MessageMatches;

namespace {

GrpcStoreOptions Options(uint16_t port = 0, std::string token = "secret") {
  GrpcStoreOptions options;
  options.port = port;
  options.job_id = "job-a";
  options.token = std::move(token);
  options.timeout = 5s;
  return options;
}

}  // namespace

TEST_CASE("the gRPC store sets, gets, adds, checks and waits", "[distribute]") {
  auto server = GrpcStoreServer::Start(Options());
  REQUIRE(server->port() > 0);
  auto store = CreateGrpcStore(Options(server->port()));
  auto other = CreateGrpcStore(Options(server->port()));
  store->set("a", std::string("v\0w", 3));
  CHECK(other->get("a", 1s) == std::string("v\0w", 3));
  CHECK(store->add("n", 5) == 5);
  CHECK(other->add("n", -2) == 3);
  CHECK(store->check({"a", "n"}));
  CHECK_FALSE(store->check({"a", "absent"}));

  std::thread late([&] {
    std::this_thread::sleep_for(100ms);
    other->set("later", "x");
  });
  const auto start = std::chrono::steady_clock::now();
  CHECK(store->get("later", 5s) == "x");
  late.join();
  CHECK(std::chrono::steady_clock::now() - start < 2s);
  store->wait({"a", "later"}, 1s);

  CHECK_THROWS_MATCHES(store->get("never", 200ms), est::TimeoutError,
                       MessageMatches(Catch::Contains("key 'never'") && Catch::Contains("200 ms")));
  CHECK_THROWS_MATCHES(store->wait({"a", "never", "nor"}, 200ms), est::TimeoutError,
                       MessageMatches(Catch::Contains("keys 'never', 'nor'")));
  store->set("text", "not a number");
  CHECK_THROWS_AS(store->add("text", 1), est::CommunicationError);
}

TEST_CASE("the gRPC store refuses another job id or a wrong token, naming the peer once", "[distribute]") {
  est::testing::LogCapture log;
  auto server = GrpcStoreServer::Start(Options());
  auto wrong_token = CreateGrpcStore(Options(server->port(), "guess"));
  CHECK_THROWS_MATCHES(wrong_token->set("k", "v"), est::ConfigError,
                       MessageMatches(Catch::Contains("job token is missing or wrong")));
  CHECK_THROWS_AS(wrong_token->get("k", 1s), est::ConfigError);
  auto no_token = CreateGrpcStore(Options(server->port(), ""));
  CHECK_THROWS_AS(no_token->check({"k"}), est::ConfigError);
  GrpcStoreOptions other_job = Options(server->port());
  other_job.job_id = "job-b";
  CHECK_THROWS_MATCHES(CreateGrpcStore(other_job)->add("k", 1), est::ConfigError,
                       MessageMatches(Catch::Contains("job id 'job-b' is not this job's ('job-a')")));
  // Nothing a refused call sent was stored.
  auto right = CreateGrpcStore(Options(server->port()));
  CHECK_FALSE(right->check({"k"}));
  // Each refused peer is logged once, by its address: three clients, four refused calls.
  server.reset();
  const std::string text = log.text();
  size_t lines = 0;
  for (size_t at = text.find("refused a call from ipv4:127.0.0.1:"); at != std::string::npos;
       at = text.find("refused a call from ipv4:127.0.0.1:", at + 1))
    ++lines;
  CHECK(lines == 3);
}

TEST_CASE("a gRPC store client that starts before its server connects once it listens", "[distribute]") {
  uint16_t port = 0;
  {
    auto probe = GrpcStoreServer::Start(Options());
    port = probe->port();
  }
  auto store = CreateGrpcStore(Options(port));
  std::unique_ptr<GrpcStoreServer> server;
  std::thread starter([&] {
    std::this_thread::sleep_for(300ms);
    server = GrpcStoreServer::Start(Options(port));
    CreateGrpcStore(Options(port))->set("ready", "1");
  });
  const auto start = std::chrono::steady_clock::now();
  CHECK(store->get("ready", 5s) == "1");
  const auto waited = std::chrono::steady_clock::now() - start;
  starter.join();
  CHECK(waited < 1s);
}

TEST_CASE("a 16 MB value round-trips through the gRPC store", "[distribute]") {
  auto server = GrpcStoreServer::Start(Options());
  auto store = CreateGrpcStore(Options(server->port()));
  std::string value(16 << 20, '\0');
  for (size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>((i * 7919) >> 3);
  store->set("big", value);
  CHECK(store->get("big", 5s) == value);
}

TEST_CASE("an unreachable gRPC store is a CommunicationError after the timeout", "[distribute]") {
  uint16_t port = 0;
  {
    auto probe = GrpcStoreServer::Start(Options());
    port = probe->port();
  }
  GrpcStoreOptions options = Options(port);
  options.timeout = 300ms;
  CHECK_THROWS_MATCHES(CreateGrpcStore(options)->set("k", "v"), est::CommunicationError,
                       MessageMatches(Catch::Contains("127.0.0.1:" + std::to_string(port)) &&
                                      Catch::Contains("unreachable")));
}
