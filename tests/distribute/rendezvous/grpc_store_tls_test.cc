// The gRPC store over TLS, with a certificate authority made at test time by openssl: a
// client that trusts it connects; one without it, or trusting another authority, fails
// with a clear error; under mutual TLS a client without a certificate is refused.

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/error.h"
#include "distribute/rendezvous/grpc_store.h"
#include "tests/test_util.h"

using namespace est::distribute;
using namespace std::chrono_literals;
using est::testing::MessageMatches;
namespace fs = std::filesystem;

namespace {

/// Makes `<dir>/<name>.pem` and `.key`: a certificate authority, or with `ca` a certificate
/// it signs for 127.0.0.1.
void MakeCertificate(const fs::path& dir, const std::string& name, const std::string& ca = "") {
  const std::string d = dir.string() + "/";
  std::string command;
  if (ca.empty()) {
    command = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=" + name + " -keyout " + d + name +
              ".key -out " + d + name + ".pem";
  } else {
    command = "openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout " + d + name + ".key -out " + d +
              name + ".csr && printf 'subjectAltName=IP:127.0.0.1,DNS:localhost' > " + d + name +
              ".ext && openssl x509 -req -days 1 -in " + d + name + ".csr -CA " + d + ca + ".pem -CAkey " + d + ca +
              ".key -CAcreateserial -out " + d + name + ".pem -extfile " + d + name + ".ext";
  }
  REQUIRE(std::system((command + " > /dev/null 2>&1").c_str()) == 0);
}

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
                       MessageMatches(Catch::Contains("unreachable")));
  GrpcStoreOptions wrong_ca = plain;
  wrong_ca.tls.ca_file = (dir / "other_ca.pem").string();
  CHECK_THROWS_AS(CreateGrpcStore(wrong_ca)->set("k", "v"), est::CommunicationError);

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
  }
}
