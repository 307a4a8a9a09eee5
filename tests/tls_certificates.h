#pragma once
/// Certificates made at test time by openssl, for the TLS tests of the chief's store and of
/// est-serve.

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace est::testing {

/// The shell command that makes `<dir>/<name>.pem` and `<dir>/<name>.key`: a certificate
/// authority, or with `ca` a certificate that `<dir>/<ca>.pem` signs for 127.0.0.1 and
/// localhost (for a server or a client: it has no extended key usage). Quiet; its status says
/// whether it worked.
inline std::string CertificateCommand(const std::filesystem::path& dir, const std::string& name,
                                      const std::string& ca = "") {
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
  return "(" + command + ") > /dev/null 2>&1";
}

/// Runs CertificateCommand in a test, which fails when openssl does.
inline void MakeCertificate(const std::filesystem::path& dir, const std::string& name, const std::string& ca = "") {
  REQUIRE(std::system(CertificateCommand(dir, name, ca).c_str()) == 0);
}

}  // namespace est::testing
