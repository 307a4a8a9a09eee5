#include "net/http_server.h"

#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdarg>
#include <cstdio>

#include "common/error.h"
#include "common/file_util.h"
#include "common/logging.h"
#include "net/listen_socket.h"
#include "net/secret_compare.h"

namespace est::net {
namespace {

/// A request being read: its parts so far, and whether its body went over the limit (and how
/// many bytes of it were dropped).
struct PendingRequest {
  HttpRequest request;
  bool too_large = false;
  size_t dropped = 0;
};

std::string Lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

MHD_Result CollectHeader(void* cls, MHD_ValueKind, const char* key, const char* value) {
  (*static_cast<std::map<std::string, std::string>*>(cls))[Lower(key)] = value == nullptr ? "" : value;
  return MHD_YES;
}

void LogMhd(void*, const char* format, va_list arguments) {
  char message[512];
  std::vsnprintf(message, sizeof message, format, arguments);
  std::string text = message;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  Log().warn("http: {}", text);
}

void Completed(void*, MHD_Connection*, void** con_cls, MHD_RequestTerminationCode) {
  delete static_cast<PendingRequest*>(*con_cls);
  *con_cls = nullptr;
}

MHD_Result Queue(MHD_Connection* connection, const HttpResponse& answer) {
  MHD_Response* response = MHD_create_response_from_buffer(answer.body.size(), const_cast<char*>(answer.body.data()),
                                                            MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, answer.content_type.c_str());
  for (const auto& [name, value] : answer.headers) MHD_add_response_header(response, name.c_str(), value.c_str());
  const MHD_Result queued = MHD_queue_response(connection, static_cast<unsigned>(answer.status), response);
  MHD_destroy_response(response);
  return queued;
}

HttpResponse PlainError(int status, const std::string& message) {
  HttpResponse response;
  response.status = status;
  response.content_type = "text/plain; charset=utf-8";
  response.body = message + "\n";
  return response;
}

/// Whether the TLS connection's client presented a certificate that its trust verifies.
bool ClientCertificateVerified(MHD_Connection* connection) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  if (info == nullptr || info->tls_session == nullptr) return false;
  auto session = static_cast<gnutls_session_t>(info->tls_session);
  unsigned int listed = 0;
  if (gnutls_certificate_get_peers(session, &listed) == nullptr || listed == 0) return false;
  unsigned int status = 0;
  return gnutls_certificate_verify_peers2(session, &status) == GNUTLS_E_SUCCESS && status == 0;
}

}  // namespace

const std::string& HttpRequest::header(const std::string& name) const {
  static const std::string kNone;
  auto it = headers.find(name);
  return it == headers.end() ? kNone : it->second;
}

bool BearerTokenMatches(const std::string& authorization, const std::string& token) {
  return token.empty() || ConstantTimeEquals(authorization, "Bearer " + token);
}

struct HttpServer::Impl {
  HttpHandler handler;
  HttpServerOptions options;
  std::string cert, key, ca;  ///< PEM texts, which libmicrohttpd reads while it runs
  std::vector<MHD_Daemon*> daemons;
  uint16_t port = 0;

  MHD_Result answer(MHD_Connection* connection, const char* url, const char* method, const char* upload_data,
                    size_t* upload_data_size, void** con_cls) {
    auto* pending = static_cast<PendingRequest*>(*con_cls);
    if (pending == nullptr) {  // the headers have come
      pending = new PendingRequest;
      *con_cls = pending;
      pending->request.method = method;
      pending->request.path = url;
      MHD_get_connection_values(connection, MHD_HEADER_KIND, CollectHeader, &pending->request.headers);
      const std::string& length = pending->request.header("content-length");
      const bool digits = !length.empty() && std::all_of(length.begin(), length.end(), [](unsigned char c) {
                            return std::isdigit(c) != 0;
                          });
      if (digits && (length.size() > 18 || std::stoll(length) > options.max_body_bytes))
        return Queue(connection, too_large());
      return MHD_YES;
    }
    if (*upload_data_size > 0) {  // more of the body
      // A body that grows past the limit without having said its length (chunked) is read to
      // its end and dropped, then answered 413 (libmicrohttpd answers only once the upload is
      // read); one that goes on past twice the limit has its connection closed.
      const size_t limit = static_cast<size_t>(options.max_body_bytes);
      if (pending->too_large || pending->request.body.size() + *upload_data_size > limit) {
        if (!pending->too_large) pending->dropped = pending->request.body.size();
        pending->too_large = true;
        pending->request.body.clear();
        pending->dropped += *upload_data_size;
        *upload_data_size = 0;
        return pending->dropped > 2 * limit ? MHD_NO : MHD_YES;
      }
      pending->request.body.append(upload_data, *upload_data_size);
      *upload_data_size = 0;
      return MHD_YES;
    }
    if (pending->too_large) return Queue(connection, too_large());
    if (options.tls.require_client_certificate && !ClientCertificateVerified(connection))
      return Queue(connection, PlainError(MHD_HTTP_FORBIDDEN, "this server takes only clients with a certificate "
                                                              "signed by its certificate authority"));
    HttpResponse response;
    try {
      response = handler(pending->request);
    } catch (const std::exception& e) {
      response = PlainError(MHD_HTTP_INTERNAL_SERVER_ERROR, e.what());
    }
    return Queue(connection, response);
  }

  HttpResponse too_large() const {
    return PlainError(MHD_HTTP_CONTENT_TOO_LARGE, "the request's body is over " + std::to_string(options.max_body_bytes) +
                                                      " bytes, the most this server takes");
  }

  static MHD_Result Answer(void* cls, MHD_Connection* connection, const char* url, const char* method, const char*,
                           const char* upload_data, size_t* upload_data_size, void** con_cls) {
    return static_cast<Impl*>(cls)->answer(connection, url, method, upload_data, upload_data_size, con_cls);
  }
};

HttpServer::HttpServer(HttpHandler handler, HttpServerOptions options) : impl_(std::make_unique<Impl>()) {
  EST_CHECK(handler != nullptr, ConfigError, options.what, ": no handler");
  EST_CHECK(options.max_body_bytes >= 1, ConfigError, options.what, ": max_body_bytes must be at least 1, got ",
            options.max_body_bytes);
  impl_->handler = std::move(handler);
  impl_->options = std::move(options);
  const TlsOptions& tls = impl_->options.tls;
  EST_CHECK(tls.cert_file.empty() == tls.key_file.empty(), ConfigError, impl_->options.what,
            ": TLS needs both a certificate and its key");
  EST_CHECK(!tls.require_client_certificate || !tls.ca_file.empty(), ConfigError, impl_->options.what,
            ": requiring client certificates needs the certificate authority that signs them");
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG;
  if (!tls.cert_file.empty()) {
    flags |= MHD_USE_TLS;
    impl_->cert = ReadFile(tls.cert_file);
    impl_->key = ReadFile(tls.key_file);
    if (!tls.ca_file.empty()) impl_->ca = ReadFile(tls.ca_file);
  }
  const HttpServerOptions& o = impl_->options;
  for (int fd : ListenTcp(o.host, o.port, o.what)) {
    if (impl_->port == 0) impl_->port = BoundPort(fd);
    MHD_Daemon* daemon = nullptr;
    const auto timeout = static_cast<unsigned>(std::max<int64_t>(1, o.idle_timeout.count()));
    if (tls.cert_file.empty()) {
      daemon = MHD_start_daemon(flags, 0, nullptr, nullptr, &Impl::Answer, impl_.get(), MHD_OPTION_EXTERNAL_LOGGER,
                                &LogMhd, nullptr, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_TIMEOUT, timeout,
                                MHD_OPTION_CONNECTION_LIMIT, o.max_connections, MHD_OPTION_NOTIFY_COMPLETED, &Completed,
                                nullptr, MHD_OPTION_END);
    } else {
      daemon = MHD_start_daemon(flags, 0, nullptr, nullptr, &Impl::Answer, impl_.get(), MHD_OPTION_EXTERNAL_LOGGER,
                                &LogMhd, nullptr, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_TIMEOUT, timeout,
                                MHD_OPTION_CONNECTION_LIMIT, o.max_connections, MHD_OPTION_NOTIFY_COMPLETED, &Completed,
                                nullptr, MHD_OPTION_HTTPS_MEM_CERT, impl_->cert.c_str(), MHD_OPTION_HTTPS_MEM_KEY,
                                impl_->key.c_str(), impl_->ca.empty() ? MHD_OPTION_END : MHD_OPTION_HTTPS_MEM_TRUST,
                                impl_->ca.c_str(), MHD_OPTION_END);
    }
    if (daemon == nullptr) {
      ::close(fd);
      for (MHD_Daemon* started : impl_->daemons) MHD_stop_daemon(started);
      EST_THROW(CommunicationError, "cannot serve ", o.what, " at ", HostPort(o.host, impl_->port),
                ": libmicrohttpd did not start (see the log)");
    }
    impl_->daemons.push_back(daemon);
  }
}

HttpServer::~HttpServer() {
  for (MHD_Daemon* daemon : impl_->daemons) MHD_stop_daemon(daemon);
}

uint16_t HttpServer::port() const { return impl_->port; }

}  // namespace est::net
