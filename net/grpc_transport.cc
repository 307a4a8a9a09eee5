#include "net/grpc_transport.h"

#include <grpcpp/server_builder.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <optional>
#include <string>

#include "common/descriptor_limit.h"
#include "common/error.h"
#include "common/file_util.h"
#include "common/memory_limit.h"
#include "net/grpc_logging.h"
#include "net/listen_socket.h"
#include "net/tls_files.h"

namespace est::net {
namespace {

std::string ReadPem(const std::string& path, const char* what) {
  try {
    return ReadFile(path);
  } catch (const IoError& error) {
    EST_THROW(ConfigError, "store TLS: cannot read the ", what, " '", path, "': ", error.what());
  }
}

// Checks the files of `tls` that are set (tls_files.h).
void CheckFiles(const TlsOptions& tls) {
  if (!tls.ca_file.empty()) CheckCertificateFile(tls.ca_file, "certificate authority");
  if (!tls.cert_file.empty()) CheckCertificateFile(tls.cert_file, "certificate");
  if (!tls.cert_file.empty() && !tls.key_file.empty()) CheckKeyOfCertificate(tls.key_file, tls.cert_file);
}

// A server of `service` with `tls` and messages up to max_message_bytes, listening at
// `address` (gRPC's form); `picked` receives the port gRPC bound.
/// `add_service` registers the service with the builder.
std::unique_ptr<grpc::Server> BuildServer(const std::function<void(grpc::ServerBuilder&)>& add_service,
                                          const std::string& address, const TlsOptions& tls, int max_message_bytes,
                                          int* picked) {
  RouteGrpcLogs();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, ServerCredentials(tls), picked);
  add_service(builder);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Clients ping while a call waits (grpc_store_client.cc): every few seconds, with no data.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 1000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  builder.SetMaxReceiveMessageSize(max_message_bytes);
  builder.SetMaxSendMessageSize(max_message_bytes);
  return builder.BuildAndStart();
}

}  // namespace

std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const TlsOptions& tls) {
  if (tls.cert_file.empty()) {
    EST_CHECK(!tls.require_client_certificate && tls.key_file.empty(), ConfigError,
              "store TLS: the server needs a certificate (cert_file) for TLS");
    // Its clients get the same files, so they would speak TLS to a plain server.
    EST_CHECK(tls.ca_file.empty(), ConfigError, "store TLS: an authority (ca_file '", tls.ca_file,
              "') without a certificate of this server (cert_file): its clients would speak TLS to a server of "
              "plain TCP; give the server's certificate and key (EST_TLS_CERT_FILE and EST_TLS_KEY_FILE, "
              "est-launch --tls-cert-file and --tls-key-file), or no ca_file for plain TCP");
    return grpc::InsecureServerCredentials();
  }
  EST_CHECK(!tls.key_file.empty(), ConfigError, "store TLS: the certificate '", tls.cert_file,
            "' needs its private key (key_file)");
  EST_CHECK(!tls.require_client_certificate || !tls.ca_file.empty(), ConfigError,
            "store TLS: requiring client certificates needs the authority that signs them (ca_file)");
  CheckFiles(tls);
  grpc::SslServerCredentialsOptions options(tls.require_client_certificate
                                                ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                                                : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  if (!tls.ca_file.empty()) options.pem_root_certs = ReadPem(tls.ca_file, "certificate authority");
  options.pem_key_cert_pairs.push_back({ReadPem(tls.key_file, "private key"), ReadPem(tls.cert_file, "certificate")});
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials> ClientCredentials(const TlsOptions& tls) {
  if (tls.ca_file.empty()) {
    EST_CHECK(tls.cert_file.empty(), ConfigError,
              "store TLS: a client certificate needs the authority of the server's (ca_file)");
    return grpc::InsecureChannelCredentials();
  }
  grpc::SslCredentialsOptions options;
  EST_CHECK(tls.cert_file.empty() || !tls.key_file.empty(), ConfigError, "store TLS: the certificate '",
            tls.cert_file, "' needs its private key (key_file)");
  CheckFiles(tls);
  options.pem_root_certs = ReadPem(tls.ca_file, "certificate authority");
  if (!tls.cert_file.empty()) {
    options.pem_cert_chain = ReadPem(tls.cert_file, "certificate");
    options.pem_private_key = ReadPem(tls.key_file, "private key");
  }
  return grpc::SslCredentials(options);
}

std::string GrpcAddress(const std::string& host, uint16_t port) { return HostPort(host, port); }

namespace {

/// Serves what `add_service` registers at host:port.
StartedServer StartServer(const std::function<void(grpc::ServerBuilder&)>& add_service, const std::string& host,
                          uint16_t port, const TlsOptions& tls, int max_message_bytes, const std::string& what) {
  const std::string address = GrpcAddress(host, port);
  int picked = 0;
  StartedServer started;
  started.server = BuildServer(add_service, address, tls, max_message_bytes, &picked);
  EST_CHECK(started.server != nullptr && picked > 0, CommunicationError, "cannot serve ", what, " at ", address,
            ": ", WhyCannotListen(host, port));
  started.port = static_cast<uint16_t>(picked);
  return started;
}

}  // namespace

StartedServer StartGrpcServer(grpc::Service& service, const std::string& host, uint16_t port, const TlsOptions& tls,
                              int max_message_bytes, const std::string& what) {
  return StartGrpcServer(std::vector<grpc::Service*>{&service}, host, port, tls, max_message_bytes, what);
}

StartedServer StartGrpcServer(const std::vector<grpc::Service*>& services, const std::string& host, uint16_t port,
                              const TlsOptions& tls, int max_message_bytes, const std::string& what) {
  return StartServer(
      [&](grpc::ServerBuilder& builder) {
        for (grpc::Service* service : services) builder.RegisterService(service);
      },
      host, port, tls, max_message_bytes, what);
}

StartedServer StartGrpcServer(grpc::CallbackGenericService& service, const std::string& host, uint16_t port,
                              const TlsOptions& tls, int max_message_bytes, const std::string& what) {
  return StartServer([&](grpc::ServerBuilder& builder) { builder.RegisterCallbackGenericService(&service); }, host,
                     port, tls, max_message_bytes, what);
}

std::unique_ptr<grpc::Server> StartGrpcServerBehind(ConnectionGate& gate, grpc::Service& service, const TlsOptions& tls,
                                                    int max_message_bytes, const std::string& what) {
  int picked = 0;
  std::unique_ptr<grpc::Server> server =
      BuildServer([&](grpc::ServerBuilder& builder) { builder.RegisterService(&service); }, gate.server_address(), tls,
                  max_message_bytes, &picked);
  EST_CHECK(server != nullptr && picked != 0, CommunicationError, "cannot serve ", what, " at ", gate.server_address(),
            " behind its port ", gate.port(), ": gRPC could not listen there");
  gate.open();
  return server;
}

std::optional<std::string> HostResolutionFailure(const std::string& host) {
  addrinfo* found = nullptr;
  const int error = ::getaddrinfo(host.c_str(), nullptr, nullptr, &found);
  if (found != nullptr) ::freeaddrinfo(found);
  if (error == 0) return std::nullopt;
  return std::string(::gai_strerror(error));
}

std::string UnreachableHint(const std::string& server, const std::string& host, const TlsOptions& tls) {
  std::string hint = " (is the " + server + " running, and is its address right?";
  if (const std::optional<std::string> exhausted = DescriptorsExhausted())
    return hint + " For a connection, " + NoDescriptorLeft(*exhausted) + ")";
  if (const std::optional<std::string> unresolved = HostResolutionFailure(host))
    hint += " The host '" + host + "' does not resolve: " + *unresolved + ".";
  if (tls.ca_file.empty())
    hint += " A " + server + " that serves TLS takes only clients that trust its authority (EST_TLS_CA_FILE, "
            "--tls-ca-file).";
  else
    hint += " Over TLS: the " + server + "'s certificate must be signed by " + tls.ca_file + " and name '" + host +
            "', and under mutual TLS this task needs a certificate of its own.";
  if (const std::optional<uint64_t> limit = AddressSpaceLimitBytes())
    hint += " This process runs under an address-space limit (ulimit -v " + std::to_string(*limit / 1024) +
            "): gRPC cannot connect when its threads and buffers do not fit in it.";
  return hint + ")";
}

}  // namespace est::net
