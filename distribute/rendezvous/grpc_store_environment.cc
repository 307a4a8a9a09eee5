// The store's security settings from the environment (est-launch passes them to its tasks).

#include <cstdlib>

#include "common/error.h"
#include "distribute/rendezvous/grpc_store.h"

namespace est::distribute {
namespace {

std::string Variable(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

}  // namespace

std::string DefaultJobId(const std::string& chief_address) {
  const std::string id = Variable("EST_JOB_ID");
  return id.empty() ? "cluster@" + chief_address : id;
}

std::string JobTokenFromEnvironment() { return Variable("EST_JOB_TOKEN"); }

net::TlsOptions StoreTlsFromEnvironment() {
  net::TlsOptions tls;
  tls.ca_file = Variable("EST_TLS_CA_FILE");
  tls.cert_file = Variable("EST_TLS_CERT_FILE");
  tls.key_file = Variable("EST_TLS_KEY_FILE");
  const std::string require = Variable("EST_TLS_REQUIRE_CLIENT_CERT");
  EST_CHECK(require.empty() || require == "0" || require == "1", ConfigError,
            "EST_TLS_REQUIRE_CLIENT_CERT must be 1 or 0, got '", require, "'");
  tls.require_client_certificate = require == "1";
  return tls;
}

}  // namespace est::distribute
