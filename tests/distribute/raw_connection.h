#pragma once
/// RawConnection: a TCP connection to a store port that sends whatever bytes a test
/// chooses, as a stranger (or a broken client) would; the bytes of requests of this build's
/// c10d protocol; and TryConnect, how a connection attempt to an address ends.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "distribute/rendezvous/store_request.h"

namespace est::testing {

/// How a TCP connection to ip:port ends within `limit`: "connected", "refused" or "timed out".
inline std::string TryConnect(const std::string& ip, uint16_t port,
                              std::chrono::milliseconds limit = std::chrono::milliseconds(400)) {
  const bool v6 = ip.find(':') != std::string::npos;
  sockaddr_storage address{};
  socklen_t length = 0;
  if (v6) {
    auto& in6 = reinterpret_cast<sockaddr_in6&>(address);
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(port);
    REQUIRE(::inet_pton(AF_INET6, ip.c_str(), &in6.sin6_addr) == 1);
    length = sizeof(in6);
  } else {
    auto& in = reinterpret_cast<sockaddr_in&>(address);
    in.sin_family = AF_INET;
    in.sin_port = htons(port);
    REQUIRE(::inet_pton(AF_INET, ip.c_str(), &in.sin_addr) == 1);
    length = sizeof(in);
  }
  const int fd = ::socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
  REQUIRE(fd >= 0);
  int error = 0;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), length) != 0) {
    error = errno;
    if (error == EINPROGRESS) {
      pollfd poll_fd{fd, POLLOUT, 0};
      socklen_t error_length = sizeof(error);
      if (::poll(&poll_fd, 1, static_cast<int>(limit.count())) != 1) {
        ::close(fd);
        return "timed out";
      }
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &error_length);
    }
  }
  ::close(fd);
  if (error == 0) return "connected";
  return error == ECONNREFUSED ? "refused" : std::string("failed: ") + std::strerror(error);
}

/// A connection to ip:port (IPv4), opened in the constructor.
class RawConnection {
 public:
  explicit RawConnection(uint16_t port, const std::string& ip = "127.0.0.1") : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    REQUIRE(fd_ >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    REQUIRE(::inet_pton(AF_INET, ip.c_str(), &address.sin_addr) == 1);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  }
  ~RawConnection() { Close(); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  /// Sends every byte.
  void Send(const std::string& bytes) {
    REQUIRE(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()));
  }

  /// Exactly `size` bytes, or fewer when the connection ends or `limit` passes first.
  std::string Receive(size_t size, std::chrono::milliseconds limit) {
    SetReceiveTimeout(limit);
    std::string bytes(size, '\0');
    size_t received = 0;
    while (received < size) {
      const ssize_t n = ::recv(fd_, bytes.data() + received, size - received, 0);
      if (n < 0 && errno == EINTR) continue;  // a receive timeout makes signals interrupt recv
      if (n <= 0) break;
      received += static_cast<size_t>(n);
    }
    bytes.resize(received);
    return bytes;
  }

  /// True once the server has closed this connection (within `limit`): an end of stream, or
  /// a reset when it closed with bytes of ours unread. Discards whatever replies come first.
  bool ClosedByServer(std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (true) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      SetReceiveTimeout(left);
      char bytes[4096];
      const ssize_t received = ::recv(fd_, bytes, sizeof(bytes), 0);
      if (received == 0 || (received < 0 && errno == ECONNRESET)) return true;
      if (received < 0 && errno != EINTR) return false;
    }
  }

  /// This end's address as the server sees it: "127.0.0.1:41230".
  std::string LocalAddress() const {
    sockaddr_in address{};
    socklen_t length = sizeof(address);
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    char text[INET_ADDRSTRLEN];
    ::inet_ntop(AF_INET, &address.sin_addr, text, sizeof(text));
    return std::string(text) + ":" + std::to_string(ntohs(address.sin_port));
  }

  /// Closes the connection now.
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  void SetReceiveTimeout(std::chrono::milliseconds limit) {
    timeval time{static_cast<time_t>(limit.count() / 1000), static_cast<suseconds_t>(limit.count() % 1000 * 1000)};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &time, sizeof(time));
  }

  int fd_;
};

/// The bytes of a uint64 as c10d's client sends it (this machine's byte order).
inline std::string Uint64Bytes(uint64_t value) {
  return std::string(reinterpret_cast<const char*>(&value), sizeof(value));
}

/// The c10d protocol of this build's LibTorch, whose server the chief's store front relays to.
inline const distribute::StoreProtocol& BuildProtocol() { return distribute::StoreProtocol::OfThisBuild(); }

/// The type byte of `type` in this build's protocol, as a string of one byte.
inline std::string TypeByte(distribute::StoreRequestType type) {
  return std::string(1, static_cast<char>(BuildProtocol().byte(type)));
}

/// A request of this build's protocol: the type byte, then each argument as a length and
/// its bytes. c10d's client puts "/" before each key of ours: a raw request for our key "k"
/// names "/k".
inline std::string RequestBytes(distribute::StoreRequestType type, const std::vector<std::string>& arguments) {
  std::string bytes = TypeByte(type);
  for (const std::string& argument : arguments) bytes += Uint64Bytes(argument.size()) + argument;
  return bytes;
}

/// What a connection of this build's protocol sends first: validate with c10d's magic
/// number (LibTorch 2.2 and later), or nothing.
inline std::string OpeningBytes() {
  if (!BuildProtocol().validate_first) return "";
  const uint32_t magic = distribute::kStoreValidationMagic;
  return TypeByte(distribute::StoreRequestType::kValidate) +
         std::string(reinterpret_cast<const char*>(&magic), sizeof(magic));
}

}  // namespace est::testing
