// The gRPC store over TLS, with a certificate authority made at test time by openssl: a
// client that trusts it connects; one without it, or trusting another authority, fails
// with a clear error; under mutual TLS a client without a certificate is refused.

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <string>

#include "common/error.h"
#include "distribute/rendezvous/grpc_store.h"
#include "tests/test_util.h"
#include "tests/tls_certificates.h"

// The file's own names, apart from those of the tests compiled with it in one unit.
namespace grpc_store_tls_test {
using namespace est::distribute;
using namespace std::chrono_literals;
using est::testing::MakeCertificate;
using est::testing::MessageMatches;
namespace fs = std::filesystem;

namespace {

GrpcStoreOptions Options(uint16_t port = 0) {
  GrpcStoreOptions options;
  options.port = port;
  options.job_id = "tls-job";
  options.timeout = 3s;
  return options;
}

}  // namespace

TEST_CASE("the gRPC store over TLS trusts its authority only", "[distribute]") {
  const fs::path dir = est::testing::FreshTempDir("grpc_tls");
  MakeCertificate(dir, "ca");
  MakeCertificate(dir, "other_ca");
  MakeCertificate(dir, "server", "ca");
  MakeCertificate(dir, "client", "ca");
  GrpcStoreOptions server_options = Options();
  server_options.tls = {(dir / "ca.pem").string(), (dir / "server.pem").string(), (dir / "server.key").string()};
  auto server = GrpcStoreServer::Start(server_options);

  GrpcStoreOptions trusting = Options(server->port());
  trusting.tls.ca_file = (dir / "ca.pem").string();
  auto store = CreateGrpcStore(trusting);
  store->set("k", "over TLS");
  CHECK(store->get("k", 1s) == "over TLS");

  GrpcStoreOptions plain = Options(server->port());
  plain.timeout = 500ms;
  CHECK_THROWS_MATCHES(CreateGrpcStore(plain)->set("k", "v"), est::CommunicationError,
                       MessageMatches(Catch::Contains("unreachable") &&
                                      Catch::Contains("A chief that serves TLS takes only clients that trust its "
                                                      "authority (EST_TLS_CA_FILE, --tls-ca-file)")));
  GrpcStoreOptions wrong_ca = plain;
  wrong_ca.tls.ca_file = (dir / "other_ca.pem").string();
  CHECK_THROWS_MATCHES(CreateGrpcStore(wrong_ca)->set("k", "v"), est::CommunicationError,
                       MessageMatches(Catch::Contains("the chief's certificate must be signed by " +
                                                      wrong_ca.tls.ca_file)));

  SECTION("mutual TLS refuses a client without a certificate of the authority") {
    server.reset();
    server_options.tls.require_client_certificate = true;
    server = GrpcStoreServer::Start(server_options);
    GrpcStoreOptions anonymous = Options(server->port());
    anonymous.timeout = 500ms;
    anonymous.tls.ca_file = (dir / "ca.pem").string();
    CHECK_THROWS_AS(CreateGrpcStore(anonymous)->set("k", "v"), est::CommunicationError);
    GrpcStoreOptions known = Options(server->port());
    known.tls = {(dir / "ca.pem").string(), (dir / "client.pem").string(), (dir / "client.key").string()};
    auto client = CreateGrpcStore(known);
    client->set("m", "mutual");
    CHECK(client->get("m", 1s) == "mutual");
  }
  SECTION("missing or incomplete files are ConfigErrors naming them") {
    GrpcStoreOptions missing = Options();
    missing.tls = {"", (dir / "absent.pem").string(), (dir / "server.key").string()};
    CHECK_THROWS_MATCHES(GrpcStoreServer::Start(missing), est::ConfigError,
                         MessageMatches(Catch::Contains("absent.pem")));
    GrpcStoreOptions no_key = Options();
    no_key.tls.cert_file = (dir / "server.pem").string();
    CHECK_THROWS_MATCHES(GrpcStoreServer::Start(no_key), est::ConfigError,
                         MessageMatches(Catch::Contains("needs its private key")));
    GrpcStoreOptions no_authority = server_options;
    no_authority.tls.ca_file.clear();
    CHECK_THROWS_MATCHES(ServeGrpcStore(no_authority), est::ConfigError,
                         MessageMatches(Catch::Contains("no certificate authority is given")));
  }
}

}  // namespace grpc_store_tls_test
