#pragma once
/// The checks of a TlsOptions's PEM files before gRPC gets them: gRPC takes any bytes and
/// fails only at the first handshake (a server could not say why it cannot listen, a client waits
/// out its timeout), so what is wrong with a file is named here, at start.

#include <string>

namespace est::net {

/// Checks that `path` holds at least one PEM certificate and that each is within its
/// validity period; ConfigError naming the file, `what` it is ("certificate authority"), and
/// what is wrong: not PEM, no certificate, expired (with the date), not valid yet.
void CheckCertificateFile(const std::string& path, const char* what);

/// Checks that `key_path` holds a PEM private key and that it is the key of the first
/// certificate in `cert_path`; ConfigError naming both files where it is another's.
void CheckKeyOfCertificate(const std::string& key_path, const std::string& cert_path);

}  // namespace est::net
