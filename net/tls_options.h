#pragma once
/// The TLS options every server and client of the project takes (net/grpc_transport.h turns
/// them into gRPC credentials).

#include <string>

namespace est::net {

/// TLS for a connection, from PEM files: the job's store, the ps tasks' variable service,
/// est-serve. Off when every path is empty.
struct TlsOptions {
  /// The certificate authority that signed the server's certificate (a client's trust), and
  /// under mutual TLS the clients' certificates (the server's trust).
  std::string ca_file;
  /// This side's certificate and private key: the server's, or under mutual TLS a client's.
  std::string cert_file;
  std::string key_file;
  /// On the server: refuse clients that present no certificate signed by ca_file.
  bool require_client_certificate = false;
};

}  // namespace est::net
