#pragma once
/// The credentials of the store's server and clients, plain or TLS, from GrpcStoreTls.

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include <memory>

#include "distribute/rendezvous/grpc_store.h"

namespace est::distribute::detail {

/// TLS with the server's certificate when tls.cert_file is set (requiring clients'
/// certificates signed by tls.ca_file when asked), plain TCP otherwise. ConfigError naming a
/// file that cannot be read or an incomplete set.
std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const GrpcStoreTls& tls);

/// TLS trusting tls.ca_file (with this client's certificate when tls.cert_file is set) when
/// tls.ca_file is set, plain TCP otherwise. ConfigError as ServerCredentials.
std::shared_ptr<grpc::ChannelCredentials> ClientCredentials(const GrpcStoreTls& tls);

}  // namespace est::distribute::detail
