// The TLS files are checked at start: a garbage certificate or authority, a key of another
// certificate, an expired certificate and one not valid yet are each a ConfigError naming
// the file and what is wrong, not a handshake that fails later.

#include "net/tls_files.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "common/error.h"
#include "net/grpc_transport.h"
#include "tests/test_util.h"
#include "tests/tls_certificates.h"

using est::ConfigError;
using est::testing::MessageMatches;
namespace fs = std::filesystem;
namespace tls = est::net;

namespace {

void WriteText(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A self-signed certificate `<dir>/<name>.pem` valid from `from_days` to `to_days` days from
// now (negative: in the past), made with OpenSSL's API: openssl's commands refuse such dates.
void MakeCertificateValid(const fs::path& dir, const std::string& name, long from_days, long to_days) {
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_RSA_gen(2048), &EVP_PKEY_free);
  REQUIRE(key != nullptr);
  std::unique_ptr<X509, decltype(&X509_free)> certificate(X509_new(), &X509_free);
  X509_set_version(certificate.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(certificate.get()), 1);
  X509_gmtime_adj(X509_getm_notBefore(certificate.get()), from_days * 86400);
  X509_gmtime_adj(X509_getm_notAfter(certificate.get()), to_days * 86400);
  X509_set_pubkey(certificate.get(), key.get());
  X509_NAME* subject = X509_get_subject_name(certificate.get());
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(name.c_str()), -1,
                             -1, 0);
  X509_set_issuer_name(certificate.get(), subject);
  REQUIRE(X509_sign(certificate.get(), key.get(), EVP_sha256()) > 0);
  FILE* pem = std::fopen((dir / (name + ".pem")).c_str(), "w");
  REQUIRE(pem != nullptr);
  PEM_write_X509(pem, certificate.get());
  std::fclose(pem);
  FILE* key_file = std::fopen((dir / (name + ".key")).c_str(), "w");
  REQUIRE(key_file != nullptr);
  PEM_write_PrivateKey(key_file, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(key_file);
}

}  // namespace

TEST_CASE("TLS files that are not what they should be are named at start", "[distribute]") {
  const fs::path dir = est::testing::FreshTempDir("tls_files");
  est::testing::MakeCertificate(dir, "ca");
  est::testing::MakeCertificate(dir, "server", "ca");
  est::testing::MakeCertificate(dir, "other", "ca");
  const std::string ca = (dir / "ca.pem").string(), cert = (dir / "server.pem").string(),
                    key = (dir / "server.key").string();
  CHECK_NOTHROW(tls::CheckCertificateFile(ca, "certificate authority"));
  CHECK_NOTHROW(tls::CheckCertificateFile(cert, "certificate"));
  CHECK_NOTHROW(tls::CheckKeyOfCertificate(key, cert));

  WriteText(dir / "garbage.pem", "not a certificate\n");
  CHECK_THROWS_MATCHES(tls::CheckCertificateFile((dir / "garbage.pem").string(), "certificate"), ConfigError,
                       MessageMatches(Catch::Equals("store TLS: the certificate '" + (dir / "garbage.pem").string() +
                                                    "' holds no PEM certificate (expected \"-----BEGIN "
                                                    "CERTIFICATE-----\" blocks)")));
  // A CA file cut in half.
  const std::string whole = ReadText(ca);
  WriteText(dir / "broken_ca.pem", whole.substr(0, whole.size() / 2));
  CHECK_THROWS_MATCHES(tls::CheckCertificateFile((dir / "broken_ca.pem").string(), "certificate authority"),
                       ConfigError, MessageMatches(Catch::Contains("the certificate authority '") &&
                                                   Catch::Contains("broken_ca.pem' holds no PEM certificate")));
  CHECK_THROWS_MATCHES(tls::CheckKeyOfCertificate((dir / "other.key").string(), cert), ConfigError,
                       MessageMatches(Catch::Equals("store TLS: the private key '" + (dir / "other.key").string() +
                                                    "' is not the key of the certificate '" + cert +
                                                    "': give the key the certificate was issued for")));
  CHECK_THROWS_MATCHES(tls::CheckKeyOfCertificate(cert, cert), ConfigError,
                       MessageMatches(Catch::Contains("holds no unencrypted PEM private key")));

  MakeCertificateValid(dir, "expired", -10, -1);
  CHECK_THROWS_MATCHES(tls::CheckCertificateFile((dir / "expired.pem").string(), "certificate"), ConfigError,
                       MessageMatches(Catch::Contains("expired.pem' expired on ") && Catch::EndsWith(": renew it")));
  MakeCertificateValid(dir, "future", 2, 10);
  CHECK_THROWS_MATCHES(tls::CheckCertificateFile((dir / "future.pem").string(), "certificate"), ConfigError,
                       MessageMatches(Catch::Contains("future.pem' is not valid before ")));
}

TEST_CASE("the credentials check their files, and a server with an authority but no certificate is refused",
          "[distribute]") {
  const fs::path dir = est::testing::FreshTempDir("tls_credentials");
  est::testing::MakeCertificate(dir, "ca");
  est::testing::MakeCertificate(dir, "server", "ca");
  est::testing::MakeCertificate(dir, "other", "ca");
  est::net::TlsOptions files;
  files.ca_file = (dir / "ca.pem").string();
  CHECK_THROWS_MATCHES(tls::ServerCredentials(files), ConfigError,
                       MessageMatches(Catch::Contains("an authority (ca_file '" + files.ca_file +
                                                      "') without a certificate of this server") &&
                                      Catch::Contains("--tls-cert-file")));
  CHECK(tls::ClientCredentials(files) != nullptr);
  files.cert_file = (dir / "server.pem").string();
  files.key_file = (dir / "other.key").string();
  CHECK_THROWS_MATCHES(tls::ServerCredentials(files), ConfigError,
                       MessageMatches(Catch::Contains("is not the key of the certificate")));
  CHECK_THROWS_MATCHES(tls::ClientCredentials(files), ConfigError,
                       MessageMatches(Catch::Contains("is not the key of the certificate")));
  files.key_file = (dir / "server.key").string();
  CHECK(tls::ServerCredentials(files) != nullptr);
}
