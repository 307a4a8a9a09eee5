#include "apps/est_launch/node_channel.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include "apps/est_launch/host_tasks.h"
#include "common/error.h"
#include "common/json_from_outside.h"

namespace est_launch {
namespace {

using Clock = NodeChannel::Clock;

// The longest message line: a cluster of thousands of tasks fits many times over.
constexpr size_t kMaxLineBytes = 1 << 20;
constexpr auto kConnectRetryInterval = std::chrono::milliseconds(500);
// TCP keepalive: probes after 10 s of silence, every 5 s, 3 unanswered ones end it.
constexpr int kKeepaliveIdleSecs = 10;
constexpr int kKeepaliveIntervalSecs = 5;
constexpr int kKeepaliveProbes = 3;
// A send that cannot proceed this long (the peer reads nothing) fails.
constexpr int kSendTimeoutSecs = 10;

// The addresses `host`:`port` resolves to, for a TCP socket; throws est::ConfigError naming it.
addrinfo* Resolve(const std::string& host, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  EST_CHECK(rc == 0 && found != nullptr, est::ConfigError, "rendezvous host '", host,
            "' does not resolve: ", ::gai_strerror(rc));
  return found;
}

void SetKeepalive(int fd) {
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &kKeepaliveIdleSecs, sizeof(kKeepaliveIdleSecs));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &kKeepaliveIntervalSecs, sizeof(kKeepaliveIntervalSecs));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &kKeepaliveProbes, sizeof(kKeepaliveProbes));
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
}

// The host part of a socket address, numeric.
std::string HostOf(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = {0};
  if (address.ss_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(address).sin6_addr, text, sizeof(text));
  else
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(address).sin_addr, text, sizeof(text));
  return text;
}

int PortOf(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(address).sin6_port);
  return ntohs(reinterpret_cast<const sockaddr_in&>(address).sin_port);
}

// Tries once to connect a blocking socket to one of `addresses`, each for at most `timeout`;
// returns the socket, or -1 with the error in *error.
int TryConnect(const addrinfo* addresses, std::chrono::milliseconds timeout, std::string* error) {
  for (const addrinfo* a = addresses; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      *error = std::strerror(errno);
      continue;
    }
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      rc = ::poll(&p, 1, static_cast<int>(timeout.count()));
      int so_error = rc > 0 ? 0 : ETIMEDOUT;
      socklen_t length = sizeof(so_error);
      if (rc > 0) ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &length);
      errno = so_error;
      rc = so_error == 0 ? 0 : -1;
    }
    if (rc == 0) return fd;
    *error = std::strerror(errno);
    ::close(fd);
  }
  return -1;
}

bool Readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return fd >= 0 && ::poll(&p, 1, 0) > 0;
}

}  // namespace

NodeChannel::NodeChannel(int fd, std::string peer) : fd_(fd), peer_(std::move(peer)) {
  if (fd_ < 0) return;
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
  SetKeepalive(fd_);
}

NodeChannel::NodeChannel(NodeChannel&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      peer_(std::move(other.peer_)),
      buffer_(std::move(other.buffer_)),
      pending_(std::move(other.pending_)),
      close_reason_(std::move(other.close_reason_)) {}

NodeChannel& NodeChannel::operator=(NodeChannel&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    peer_ = std::move(other.peer_);
    buffer_ = std::move(other.buffer_);
    pending_ = std::move(other.pending_);
    close_reason_ = std::move(other.close_reason_);
  }
  return *this;
}

NodeChannel::~NodeChannel() {
  if (fd_ >= 0) ::close(fd_);
}

std::optional<NodeChannel> NodeChannel::Connect(const std::string& host, int port, Clock::time_point deadline,
                                                int wake_fd, const std::function<bool()>& interrupted,
                                                Clock::duration progress_interval,
                                                const std::function<void(const std::string&)>& on_wait) {
  addrinfo* addresses = Resolve(host, port, /*passive=*/false);
  std::string error = "not tried";
  auto next_report = Clock::now() + progress_interval;
  std::optional<NodeChannel> channel;
  while (Clock::now() < deadline && !(Readable(wake_fd) && interrupted())) {
    const int fd = TryConnect(addresses, std::chrono::milliseconds(2000), &error);
    if (fd >= 0) {
      channel.emplace(fd, "node 0 (" + JoinHostPort(host, port) + ")");
      break;
    }
    if (Clock::now() >= next_report) {
      on_wait(error);
      next_report += progress_interval;
    }
    const auto pause = std::min<Clock::duration>(kConnectRetryInterval, deadline - Clock::now());
    if (pause > Clock::duration::zero()) WaitReadable({wake_fd}, Clock::now() + pause);
  }
  ::freeaddrinfo(addresses);
  return channel;
}

std::string NodeChannel::local_host() const {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (fd_ < 0 || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) return "";
  return HostOf(address);
}

bool NodeChannel::Send(const nlohmann::json& message) {
  if (fd_ < 0) return false;
  const std::string line = message.dump() + "\n";
  size_t sent = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(kSendTimeoutSecs);
  while (sent < line.size()) {
    const ssize_t n = ::send(fd_, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR) && Clock::now() < deadline) {
      pollfd p{fd_, POLLOUT, 0};
      ::poll(&p, 1, 100);
      continue;
    }
    Close(n < 0 && errno != EAGAIN ? std::strerror(errno) : "a send did not proceed for 10 s");
    return false;
  }
  return true;
}

std::vector<nlohmann::json> NodeChannel::Receive() {
  char chunk[16 * 1024];
  while (fd_ >= 0) {
    const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n > 0) {
      buffer_.append(chunk, static_cast<size_t>(n));
      size_t start = 0;
      for (size_t end; (end = buffer_.find('\n', start)) != std::string::npos; start = end + 1) {
        est::ParsedJson parsed = est::ParseJsonFromOutside(std::string_view(buffer_).substr(start, end - start));
        nlohmann::json& message = parsed.value;
        if (!message.is_object()) {
          Close(parsed.ok() ? "it sent a line that is not a JSON object (not est-launch?)"
                            : "it sent a line that is not JSON (" + parsed.error + "; not est-launch?)");
          break;
        }
        pending_.push_back(std::move(message));
      }
      if (fd_ < 0) break;
      buffer_.erase(0, start);
      if (buffer_.size() > kMaxLineBytes) Close("it sent a line over 1 MiB (not est-launch?)");
    } else if (n == 0) {
      Close("the connection closed");
    } else if (errno == EINTR) {
      continue;
    } else {
      if (errno != EAGAIN && errno != EWOULDBLOCK) Close(std::strerror(errno));
      break;
    }
  }
  return std::exchange(pending_, {});
}

std::optional<nlohmann::json> NodeChannel::ReceiveOne(Clock::time_point deadline, int interrupt_fd) {
  while (true) {
    std::vector<nlohmann::json> messages = Receive();
    if (!messages.empty()) {
      // Keep what came after the first for the next call.
      pending_.insert(pending_.begin(), std::make_move_iterator(messages.begin() + 1),
                      std::make_move_iterator(messages.end()));
      return std::move(messages.front());
    }
    if (fd_ < 0 || Clock::now() >= deadline) return std::nullopt;
    const std::vector<int> ready = WaitReadable({fd_, interrupt_fd}, deadline);
    if (std::find(ready.begin(), ready.end(), interrupt_fd) != ready.end()) return std::nullopt;
  }
}

void NodeChannel::Close(const std::string& reason) {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  close_reason_ = reason;
}

NodeListener::NodeListener(const std::string& host, int port) {
  addrinfo* addresses = Resolve(host, port, /*passive=*/true);
  std::string error;
  for (const addrinfo* a = addresses; a != nullptr && fd_ < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    const int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      fd_ = fd;
    } else {
      error = std::strerror(errno);
      ::close(fd);
    }
  }
  ::freeaddrinfo(addresses);
  EST_CHECK(fd_ >= 0, est::ConfigError, "--rendezvous ", JoinHostPort(host, port), ": node 0 cannot listen there (",
            error, "); it must be an address of node 0's host and a free port");
}

NodeListener::~NodeListener() {
  if (fd_ >= 0) ::close(fd_);
}

std::optional<NodeChannel> NodeListener::Accept() {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  const int fd = ::accept4(fd_, reinterpret_cast<sockaddr*>(&address), &length, SOCK_CLOEXEC);
  if (fd < 0) return std::nullopt;
  return NodeChannel(fd, JoinHostPort(HostOf(address), PortOf(address)));
}

std::vector<int> WaitReadable(const std::vector<int>& fds, NodeChannel::Clock::time_point deadline) {
  std::vector<pollfd> polled;
  for (int fd : fds)
    if (fd >= 0) polled.push_back({fd, POLLIN, 0});
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  std::vector<int> ready;
  if (::poll(polled.data(), polled.size(), static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30))) <= 0) return ready;
  for (const pollfd& p : polled)
    if (p.revents != 0) ready.push_back(p.fd);
  return ready;
}

}  // namespace est_launch
