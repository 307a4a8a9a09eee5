#include "distribute/rendezvous/grpc_credentials.h"

#include <grpcpp/server_builder.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "common/file_util.h"
#include "distribute/rendezvous/grpc_logging.h"
#include "distribute/rendezvous/tls_files.h"

namespace est::distribute::detail {
namespace {

std::string ReadPem(const std::string& path, const char* what) {
  try {
    return ReadFile(path);
  } catch (const IoError& error) {
    EST_THROW(ConfigError, "store TLS: cannot read the ", what, " '", path, "': ", error.what());
  }
}

// Checks the files of `tls` that are set (tls_files.h).
void CheckFiles(const GrpcStoreTls& tls) {
  if (!tls.ca_file.empty()) CheckCertificateFile(tls.ca_file, "certificate authority");
  if (!tls.cert_file.empty()) CheckCertificateFile(tls.cert_file, "certificate");
  if (!tls.cert_file.empty() && !tls.key_file.empty()) CheckKeyOfCertificate(tls.key_file, tls.cert_file);
}

// Why a server cannot listen at host:port, found by binding a plain socket there as gRPC
// would: the host does not resolve, is not this machine's, or the port is taken.
std::string WhyCannotListen(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string bare = host.size() > 2 && host.front() == '[' ? host.substr(1, host.size() - 2) : host;
  if (const int error = ::getaddrinfo(bare.c_str(), std::to_string(port).c_str(), &hints, &found); error != 0)
    return "the host '" + bare + "' does not resolve (" + ::gai_strerror(error) + "); use a name or address of this machine";
  std::string why = "gRPC could not listen there";
  for (addrinfo* candidate = found; candidate != nullptr; candidate = candidate->ai_next) {
    const int fd = ::socket(candidate->ai_family, candidate->ai_socktype, candidate->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));  // as gRPC sets it
    const int bound = ::bind(fd, candidate->ai_addr, candidate->ai_addrlen);
    const int error = errno;
    ::close(fd);
    if (bound == 0) continue;
    if (error == EADDRINUSE) why = "port " + std::to_string(port) + " is taken: another process listens there";
    else if (error == EADDRNOTAVAIL) why = "'" + bare + "' is not an address of this machine; use one of its own";
    else if (error == EACCES) why = "port " + std::to_string(port) + " needs privileges (ports below 1024)";
    else why = std::string("binding it fails: ") + std::strerror(error);
    break;
  }
  ::freeaddrinfo(found);
  return why;
}

}  // namespace

std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const GrpcStoreTls& tls) {
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

std::shared_ptr<grpc::ChannelCredentials> ClientCredentials(const GrpcStoreTls& tls) {
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

std::string GrpcAddress(const std::string& host, uint16_t port) {
  const bool ipv6 = host.find(':') != std::string::npos && host.front() != '[';
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

StartedServer StartGrpcServer(grpc::Service& service, const std::string& host, uint16_t port, const GrpcStoreTls& tls,
                              int max_message_bytes, const std::string& what) {
  RouteGrpcLogs();
  const std::string address = GrpcAddress(host, port);
  grpc::ServerBuilder builder;
  int picked = 0;
  builder.AddListeningPort(address, ServerCredentials(tls), &picked);
  builder.RegisterService(&service);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(max_message_bytes);
  builder.SetMaxSendMessageSize(max_message_bytes);
  StartedServer started;
  started.server = builder.BuildAndStart();
  EST_CHECK(started.server != nullptr && picked > 0, CommunicationError, "cannot serve ", what, " at ", address,
            ": ", WhyCannotListen(host, port));
  started.port = static_cast<uint16_t>(picked);
  return started;
}

std::string UnreachableHint(const std::string& server, const std::string& host, const GrpcStoreTls& tls) {
  std::string hint = " (is the " + server + " running, and is its address right?";
  addrinfo* found = nullptr;
  const int error = ::getaddrinfo(host.c_str(), nullptr, nullptr, &found);
  if (found != nullptr) ::freeaddrinfo(found);
  if (error != 0) hint += " The host '" + host + "' does not resolve: " + ::gai_strerror(error) + ".";
  if (tls.ca_file.empty())
    hint += " A " + server + " that serves TLS takes only clients that trust its authority (EST_TLS_CA_FILE, "
            "--tls-ca-file).";
  else
    hint += " Over TLS: the " + server + "'s certificate must be signed by " + tls.ca_file + " and name '" + host +
            "', and under mutual TLS this task needs a certificate of its own.";
  return hint + ")";
}

}  // namespace est::distribute::detail
