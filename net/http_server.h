#pragma once
/// An HTTP/1.1 server for the project's REST front ends (est-serve's KServe v2 and TensorFlow
/// Serving REST APIs, its health and metrics): GNU libmicrohttpd underneath, a thread per
/// connection (keep-alive connections are served in order, as HTTP/1.1 has it), TLS from
/// TlsOptions, and bounds on what a client may cost (body size, idle time, connections).

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "net/tls_options.h"

namespace est::net {

/// A request as a handler sees it: the whole body read.
struct HttpRequest {
  std::string method;  ///< "GET", "POST", …
  std::string path;    ///< the URL's path, percent-decoded, without the query
  std::map<std::string, std::string> headers;  ///< names in lower case
  std::string body;

  /// The header `name` (lower case), or "" when absent.
  const std::string& header(const std::string& name) const;
};

/// A handler's answer.
struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  /// More headers (name, value).
  std::vector<std::pair<std::string, std::string>> headers;
};

/// Answers one request; called on the connection's thread, so several at once. An exception it
/// throws is answered 500 with its message.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

/// Where and how an HttpServer listens.
struct HttpServerOptions {
  std::string host = "127.0.0.1";
  /// 0: a free port (HttpServer::port() tells it).
  uint16_t port = 0;
  TlsOptions tls;
  /// The largest body: one whose Content-Length says more is answered 413 without being read;
  /// a chunked one is dropped as it comes and answered 413, or cut off past twice this.
  int64_t max_body_bytes = int64_t{64} << 20;
  /// A connection idle this long is closed.
  std::chrono::seconds idle_timeout{300};
  /// The most connections at once; more wait in the listen queue.
  unsigned max_connections = 1024;
  /// Names the server in errors ("est-serve's REST API").
  std::string what = "an HTTP server";
};

/// A running HTTP server.
class HttpServer {
 public:
  /// Listens (CommunicationError naming `options.what` and the address when it cannot;
  /// ConfigError for unreadable TLS files) and serves every request with `handler`.
  HttpServer(HttpHandler handler, HttpServerOptions options);
  /// Stops: no new connections, waits for the requests being answered, closes the rest.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  uint16_t port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Whether `authorization` (a request's Authorization header) is "Bearer <token>", compared in
/// constant time; true when `token` is empty.
bool BearerTokenMatches(const std::string& authorization, const std::string& token);

}  // namespace est::net
