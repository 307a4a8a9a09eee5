#pragma once
// One HTTP/1.1 exchange with a server on loopback, for the tests of REST APIs: the request
// written by hand (so that it can be anything a client might send), the answer read whole.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <string>

namespace est::testing {

/// An answer: its status, its header lines and its body.
struct HttpAnswer {
  int status = 0;
  std::string headers;
  std::string body;
};

/// Sends `method` `path` with `body` (and `extra_headers`, each line ending "\r\n") to
/// 127.0.0.1:`port` on a fresh connection, and reads the answer until the server closes it.
inline HttpAnswer HttpExchange(uint16_t port, const std::string& method, const std::string& path,
                               const std::string& body = "", const std::string& extra_headers = "") {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  timeval timeout{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  // A body sent chunked (extra_headers say so) is already in chunks; another says its length.
  const bool chunked = extra_headers.find("Transfer-Encoding: chunked") != std::string::npos;
  const std::string request = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" +
                              (chunked ? "" : "Content-Length: " + std::to_string(body.size()) + "\r\n") +
                              extra_headers + "\r\n" + body;
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may answer (413) and close before the body is all sent
    sent += static_cast<size_t>(n);
  }
  std::string answer;
  char buffer[4096];
  for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) answer.append(buffer, static_cast<size_t>(n));
  ::close(fd);
  HttpAnswer parsed;
  const size_t end = answer.find("\r\n\r\n");
  REQUIRE(end != std::string::npos);
  parsed.status = std::stoi(answer.substr(9, 3));
  parsed.headers = answer.substr(0, end);
  parsed.body = answer.substr(end + 4);
  return parsed;
}

}  // namespace est::testing
