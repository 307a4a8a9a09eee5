#pragma once
/// What the store's server and clients share: their credentials, plain or TLS, from
/// GrpcStoreTls, and the form of their address.

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include <cstdint>
#include <memory>
#include <string>

#include "distribute/rendezvous/grpc_store.h"

namespace est::distribute::detail {

/// TLS with the server's certificate when tls.cert_file is set (requiring clients'
/// certificates signed by tls.ca_file when asked), plain TCP otherwise. ConfigError naming a
/// file that cannot be read or an incomplete set.
std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const GrpcStoreTls& tls);

/// TLS trusting tls.ca_file (with this client's certificate when tls.cert_file is set) when
/// tls.ca_file is set, plain TCP otherwise. ConfigError as ServerCredentials.
std::shared_ptr<grpc::ChannelCredentials> ClientCredentials(const GrpcStoreTls& tls);

/// "host:port" as gRPC takes it: an IPv6 literal in brackets ("[::1]:29500").
std::string GrpcAddress(const std::string& host, uint16_t port);

}  // namespace est::distribute::detail
