#pragma once
/// What every gRPC server and client of the project shares (the job's store, the ps tasks'
/// variable service, est-serve): credentials, plain or TLS, from TlsOptions, the form of an
/// address, and the start-up of a server, in front of a ConnectionGate or not.

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/impl/service_type.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "net/connection_gate.h"
#include "net/tls_options.h"

namespace est::net {

/// TLS with the server's certificate when tls.cert_file is set (requiring clients'
/// certificates signed by tls.ca_file when asked), plain TCP otherwise. ConfigError naming a
/// file that cannot be read or an incomplete set.
std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const TlsOptions& tls);

/// TLS trusting tls.ca_file (with this client's certificate when tls.cert_file is set) when
/// tls.ca_file is set, plain TCP otherwise. ConfigError as ServerCredentials.
std::shared_ptr<grpc::ChannelCredentials> ClientCredentials(const TlsOptions& tls);

/// "host:port" as gRPC takes it: an IPv6 literal in brackets ("[::1]:29500").
std::string GrpcAddress(const std::string& host, uint16_t port);

/// What to check when `server` ("chief", "ps task") at `host` cannot be reached at all:
/// " (is the <server> running, and is its address right? …)", with a host that does not
/// resolve named and what TLS (as `tls` has it on this side) needs.
std::string UnreachableHint(const std::string& server, const std::string& host, const TlsOptions& tls);

/// Why `host` does not resolve (getaddrinfo's message), or nullopt when it does.
std::optional<std::string> HostResolutionFailure(const std::string& host);

/// A started gRPC server and the port it listens on.
struct StartedServer {
  std::unique_ptr<grpc::Server> server;
  uint16_t port = 0;
};

/// Serves `service` at host:port (0: a free port) with `tls`, messages up to
/// `max_message_bytes`, one server per port (without SO_REUSEPORT a second server on the
/// port would share the first's clients). CommunicationError "cannot serve <what> at
/// <address>" when it cannot listen.
StartedServer StartGrpcServer(grpc::Service& service, const std::string& host, uint16_t port, const TlsOptions& tls,
                              int max_message_bytes, const std::string& what);
/// The same for several services on one port.
StartedServer StartGrpcServer(const std::vector<grpc::Service*>& services, const std::string& host, uint16_t port,
                              const TlsOptions& tls, int max_message_bytes, const std::string& what);
/// The same for a service of gRPC's callback generic API, which takes every method's calls.
StartedServer StartGrpcServer(grpc::CallbackGenericService& service, const std::string& host, uint16_t port,
                              const TlsOptions& tls, int max_message_bytes, const std::string& what);

/// Serves `service` as StartGrpcServer does, but at the Unix socket behind `gate`, and then
/// opens the gate: the server takes the connections the gate lets through.
/// CommunicationError when gRPC cannot listen there.
std::unique_ptr<grpc::Server> StartGrpcServerBehind(ConnectionGate& gate, grpc::Service& service, const TlsOptions& tls,
                                                    int max_message_bytes, const std::string& what);

}  // namespace est::net
