#include "net/gate_connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>

#include <algorithm>
#include <cerrno>

namespace est::net {
namespace {

/// What a gRPC client sends first over plain TCP.
constexpr char kHttp2Preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr size_t kHttp2PrefaceBytes = sizeof(kHttp2Preface) - 1;
/// A TLS record's header: type, version (2 bytes), length (2 bytes).
constexpr size_t kTlsRecordHeaderBytes = 5;
/// The longest TLS record a client may send: 2^14 bytes of plaintext and 2048 of expansion.
constexpr size_t kLongestTlsRecord = (1 << 14) + 2048;

// Reads what `fd` has into `pending`, up to its limit. False at its end or error.
bool ReadInto(int fd, PendingBytes& pending, uint32_t events) {
  char buffer[64 << 10];
  while (pending.size() < PendingBytes::kLimit) {
    const ssize_t count = ::recv(fd, buffer, std::min(sizeof(buffer), PendingBytes::kLimit - pending.size()), 0);
    if (count > 0) {
      pending.append(buffer, static_cast<size_t>(count));
      continue;
    }
    if (count < 0 && errno == EINTR) continue;
    return count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
  return !(events & EPOLLHUP);  // full, and the peer hung up: nothing more will be read
}

// Writes what `pending` holds to `fd` until it would block. False on an error.
bool Flush(int fd, PendingBytes& pending) {
  while (pending.size() > 0) {
    const ssize_t count = ::send(fd, pending.data(), pending.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (count > 0) {
      pending.consume(static_cast<size_t>(count));
      continue;
    }
    if (count < 0 && errno == EINTR) continue;
    return count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
  return true;
}

}  // namespace

Opening CheckOpening(const std::string& bytes, bool tls) {
  if (tls) {
    const auto byte = [&](size_t i) { return static_cast<uint8_t>(bytes[i]); };
    if (!bytes.empty() && byte(0) != 0x16) return Opening::kGarbage;  // a handshake record
    if (bytes.size() >= 2 && byte(1) != 0x03) return Opening::kGarbage;  // of TLS (version 3.x)
    if (bytes.size() < kTlsRecordHeaderBytes) return Opening::kIncomplete;
    const size_t length = (static_cast<size_t>(byte(3)) << 8) | byte(4);
    return length > 0 && length <= kLongestTlsRecord ? Opening::kGrpc : Opening::kGarbage;
  }
  const size_t compared = std::min(bytes.size(), kHttp2PrefaceBytes);
  if (bytes.compare(0, compared, kHttp2Preface, compared) != 0) return Opening::kGarbage;
  return bytes.size() >= kHttp2PrefaceBytes ? Opening::kGrpc : Opening::kIncomplete;
}

std::string PeerText(const sockaddr_storage& address, std::string* host) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    ::inet_ntop(AF_INET, &v4.sin_addr, text, sizeof(text));
    *host = text;
    return "ipv4:" + *host + ":" + std::to_string(ntohs(v4.sin_port));
  }
  const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
  ::inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof(text));
  *host = text;
  return "ipv6:[" + *host + "]:" + std::to_string(ntohs(v6.sin6_port));
}

void PendingBytes::append(const char* bytes, size_t count) {
  if (offset_ > 0 && offset_ >= data_.size() / 2) {
    data_.erase(0, offset_);
    offset_ = 0;
  }
  data_.append(bytes, count);
}

void PendingBytes::consume(size_t count) {
  offset_ += count;
  if (offset_ == data_.size()) {
    data_.clear();
    offset_ = 0;
  }
}

bool GateConnection::relay(Side from, uint32_t events) {
  const int self = from == Side::kClient ? client : server;
  const int other = from == Side::kClient ? server : client;
  PendingBytes& to_self = from == Side::kClient ? to_client : to_server;
  PendingBytes& to_other = from == Side::kClient ? to_server : to_client;
  if (events & EPOLLERR) return false;
  if ((events & EPOLLOUT) && !Flush(self, to_self)) return false;
  if (!(events & (EPOLLIN | EPOLLHUP))) return true;
  const bool open = ReadInto(self, to_other, events);
  return Flush(other, to_other) && open;
}

uint32_t GateConnection::interest(Side side) const {
  const PendingBytes& to_self = side == Side::kClient ? to_client : to_server;
  const PendingBytes& to_other = side == Side::kClient ? to_server : to_client;
  const bool read = (side == Side::kClient && !forwarded()) || to_other.size() < PendingBytes::kLimit;
  return (read ? static_cast<uint32_t>(EPOLLIN) : 0u) | (to_self.size() > 0 ? static_cast<uint32_t>(EPOLLOUT) : 0u);
}

}  // namespace est::net
