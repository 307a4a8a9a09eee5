#include "distribute/rendezvous/store_front.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/logging.h"
#include "distribute/rendezvous/tcp_socket.h"
#include "distribute/rendezvous/store_request.h"

namespace est::distribute {
namespace {

using Clock = std::chrono::steady_clock;

// The most bytes read from a socket at once.
constexpr size_t kReadChunk = size_t{64} << 10;
// A client with more unread replies than this sends no more requests until it reads them.
constexpr size_t kReplyBacklogPause = size_t{1} << 20;
// How long accepting pauses when the process is out of file descriptors.
constexpr std::chrono::milliseconds kAcceptPause(100);

// Bytes queued for a non-blocking socket, sent as it takes them.
class Outbox {
 public:
  void Append(const char* data, size_t size) { bytes_.append(data, size); }
  size_t pending() const { return bytes_.size() - sent_; }

  // Sends what the socket takes now; false when the connection failed.
  bool Flush(int fd) {
    while (pending() > 0) {
      const ssize_t sent = ::send(fd, bytes_.data() + sent_, pending(), MSG_NOSIGNAL);
      if (sent > 0) {
        sent_ += static_cast<size_t>(sent);
      } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        break;
      } else if (errno != EINTR) {
        return false;
      }
    }
    if (pending() == 0) {
      bytes_.clear();
      sent_ = 0;
      if (bytes_.capacity() > kReadChunk) bytes_.shrink_to_fit();
    }
    return true;
  }

 private:
  std::string bytes_;
  size_t sent_ = 0;
};

// One client and its connection to the store.
struct Connection {
  Connection(UniqueFd client_fd, std::string peer_name, Clock::time_point now)
      : client(std::move(client_fd)), peer(std::move(peer_name)), progress(now) {}

  UniqueFd client;
  UniqueFd upstream;
  std::string peer;                ///< the client's ip:port
  std::string request;             ///< received bytes that are not yet a whole request
  Outbox to_upstream;              ///< whole requests on their way to the store
  Outbox to_client;                ///< replies on their way to the client
  bool client_closed = false;      ///< nothing more comes from or goes to the client
  bool upstream_closed = false;    ///< nothing more comes from or goes to the store
  bool opened = false;             ///< a first whole request has been forwarded
  Clock::time_point progress;      ///< when `request` last grew (or reading it resumed)
  Clock::time_point closing_since;  ///< when one side closed

  // Whether the front reads the client's requests now: not while earlier ones wait for the
  // store, or while many replies wait for the client.
  bool ReadsRequests() const {
    return !client_closed && !upstream_closed && to_upstream.pending() == 0 &&
           to_client.pending() < kReplyBacklogPause;
  }
};

// Reads what `fd` holds now, up to `limit` bytes, appending to `bytes`. Returns false at the
// end of the stream or on an error.
bool ReadSome(int fd, std::string& bytes, size_t limit) {
  const size_t old_size = bytes.size();
  bytes.resize(old_size + limit);
  ssize_t received;
  do {
    received = ::recv(fd, bytes.data() + old_size, limit, 0);
  } while (received < 0 && errno == EINTR);
  const bool nothing_yet = received < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  bytes.resize(old_size + static_cast<size_t>(std::max<ssize_t>(received, 0)));
  return received > 0 || nothing_yet;
}

void SetNoDelay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace

class StoreFront::Relay {
 public:
  explicit Relay(const StoreFrontOptions& options)
      : upstream_port_(options.upstream_port), stall_limit_(options.stall_limit) {
    EST_CHECK(options.stall_limit.count() > 0, ConfigError, "TCP store ", options.host, ":", options.port,
              ": the stall limit must be positive, got ", options.stall_limit.count(), " ms");
    listeners_ = ListenOn(options.host, options.port, port_);
    description_ = "TCP store " + options.host + ":" + std::to_string(port_);
    wake_ = UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    EST_CHECK(wake_.get() >= 0, CommunicationError, description_, ": cannot create an eventfd: ", std::strerror(errno));
    thread_ = std::thread([this] { Run(); });
  }

  ~Relay() {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t written = ::write(wake_.get(), &one, sizeof(one));
    thread_.join();
  }

  uint16_t port() const { return port_; }

 private:
  void Run() {
    std::vector<pollfd> fds;
    while (true) {
      const Clock::time_point now = Clock::now();
      const bool accepting = now >= accept_paused_until_;
      Clock::time_point deadline = accepting ? Clock::time_point::max() : accept_paused_until_;
      fds.clear();
      fds.push_back({wake_.get(), POLLIN, 0});
      for (const UniqueFd& listener : listeners_) fds.push_back({listener.get(), static_cast<short>(accepting ? POLLIN : 0), 0});
      for (const auto& connection : connections_) {
        Connection& c = *connection;
        const bool reads = c.ReadsRequests();
        if (!reads) c.progress = now;  // the stall clock runs only while the front reads
        const auto client_events = static_cast<short>((reads ? POLLIN : 0) | (c.to_client.pending() ? POLLOUT : 0));
        const auto upstream_events = static_cast<short>(POLLIN | (c.to_upstream.pending() ? POLLOUT : 0));
        fds.push_back({c.client_closed ? -1 : c.client.get(), client_events, 0});
        fds.push_back({c.upstream_closed ? -1 : c.upstream.get(), upstream_events, 0});
        deadline = std::min(deadline, Deadline(c));
      }
      int timeout_ms = -1;
      if (deadline != Clock::time_point::max()) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
        timeout_ms = static_cast<int>(std::clamp<int64_t>(left, 0, 60'000));
      }
      if (::poll(fds.data(), fds.size(), timeout_ms) < 0) {
        if (errno == EINTR) continue;
        Log().error("{}: poll failed ({}); the store takes no more connections", description_, std::strerror(errno));
        return;
      }
      if (fds[0].revents != 0) return;
      const size_t served = connections_.size();
      for (size_t i = 0; i < listeners_.size(); ++i) {
        if (fds[1 + i].revents & POLLIN) Accept(listeners_[i].get());
      }
      const size_t first = 1 + listeners_.size();
      std::vector<bool> keep(connections_.size(), true);
      for (size_t i = 0; i < served; ++i) {
        keep[i] = Serve(*connections_[i], fds[first + 2 * i].revents, fds[first + 2 * i + 1].revents, Clock::now());
      }
      size_t kept = 0;
      for (size_t i = 0; i < connections_.size(); ++i) {
        if (keep[i]) connections_[kept++] = std::move(connections_[i]);
      }
      connections_.resize(kept);
    }
  }

  // When `c` must have made progress, or Clock::time_point::max().
  Clock::time_point Deadline(const Connection& c) const {
    if (c.client_closed || c.upstream_closed) return c.closing_since + stall_limit_;
    if (c.ReadsRequests() && !c.request.empty()) return c.progress + stall_limit_;
    return Clock::time_point::max();
  }

  void Accept(int listener) {
    while (true) {
      sockaddr_storage address{};
      socklen_t length = sizeof(address);
      UniqueFd client(::accept4(listener, reinterpret_cast<sockaddr*>(&address), &length, SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (client.get() < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          Log().warn("{}: cannot accept a connection ({}); accepting again in {} ms", description_,
                     std::strerror(errno), kAcceptPause.count());
          accept_paused_until_ = Clock::now() + kAcceptPause;
        }
        return;
      }
      auto connection =
          std::make_unique<Connection>(std::move(client), DescribeSocketAddress(address), Clock::now());
      std::string error;
      connection->upstream = ConnectToLoopback(upstream_port_, error);
      if (connection->upstream.get() < 0) {
        Log().warn("{}: dropped {}: cannot reach the store on 127.0.0.1:{}: {}", description_, connection->peer,
                   upstream_port_, error);
        continue;
      }
      SetNoDelay(connection->client.get());
      SetNoDelay(connection->upstream.get());
      connections_.push_back(std::move(connection));
    }
  }

  // Moves bytes both ways; false when `c` is done with (and logs why, when it was refused).
  bool Serve(Connection& c, short client_events, short upstream_events, Clock::time_point now) {
    const bool upstream_was_closed = c.upstream_closed;
    if (!c.upstream_closed && upstream_events != 0) {
      for (int i = 0; i < 16 && !c.upstream_closed; ++i) {
        std::string replies;
        if (!ReadSome(c.upstream.get(), replies, kReadChunk)) Close(c.upstream_closed, c, now);
        if (replies.empty()) break;
        c.to_client.Append(replies.data(), replies.size());
      }
      if (c.to_client.pending() > kMaxStoreFrontReplyBacklog) {
        return Drop(c, "left more than " + std::to_string(kMaxStoreFrontReplyBacklog) + " bytes of replies unread");
      }
    }
    if (!c.client_closed && client_events != 0) {
      if (!c.ReadsRequests()) {
        if (client_events & (POLLHUP | POLLERR)) Close(c.client_closed, c, now);
      } else {
        const size_t before = c.request.size();
        if (!ReadSome(c.client.get(), c.request, kReadChunk)) Close(c.client_closed, c, now);
        if (c.request.size() > before) c.progress = now;
        if (!ForwardWholeRequests(c)) return false;
        if (c.client_closed && !c.request.empty()) {
          Log().warn("{}: {} closed its connection in the middle of a request ({} bytes of it sent)", description_,
                     c.peer, c.request.size());
        }
      }
    }
    if (!c.upstream_closed && !c.to_upstream.Flush(c.upstream.get())) Close(c.upstream_closed, c, now);
    if (!c.client_closed && !c.to_client.Flush(c.client.get())) Close(c.client_closed, c, now);
    if (c.upstream_closed && !upstream_was_closed && !c.client_closed) {
      Log().warn("{}: the store closed the connection of {} (it refused one of its requests)", description_, c.peer);
    }
    if (c.client_closed && (c.upstream_closed || c.to_upstream.pending() == 0)) return false;
    if (c.upstream_closed && (c.client_closed || c.to_client.pending() == 0)) return false;
    if (now < Deadline(c)) return true;
    if (c.client_closed || c.upstream_closed) return false;  // its last bytes found no taker
    return Drop(c, "sent " + std::to_string(c.request.size()) + " bytes of a request and nothing more for " +
                       std::to_string(stall_limit_.count()) + " ms");
  }

  // Queues each whole request at the front of `c.request` for the store; false (after a
  // warning) at an invalid one.
  bool ForwardWholeRequests(Connection& c) {
    size_t consumed = 0;
    while (consumed < c.request.size()) {
      const StoreRequestScan scan = ScanStoreRequest(protocol_, c.request.data() + consumed,
                                                     c.request.size() - consumed, !c.opened);
      if (scan.status == StoreRequestScan::Status::kInvalid) return Drop(c, scan.error);
      if (scan.status == StoreRequestScan::Status::kIncomplete) break;
      c.to_upstream.Append(c.request.data() + consumed, scan.length);
      consumed += scan.length;
      c.opened = true;
    }
    c.request.erase(0, consumed);
    if (c.request.empty() && c.request.capacity() > kReadChunk) c.request.shrink_to_fit();
    return true;
  }

  void Close(bool& side_closed, Connection& c, Clock::time_point now) {
    if (!c.client_closed && !c.upstream_closed) c.closing_since = now;
    side_closed = true;
  }

  // Logs that `c` is dropped, and why; returns false.
  bool Drop(const Connection& c, const std::string& reason) {
    Log().warn("{}: dropped {}: {}", description_, c.peer, reason);
    return false;
  }

  const StoreProtocol& protocol_ = StoreProtocol::OfThisBuild();
  uint16_t upstream_port_;
  std::chrono::milliseconds stall_limit_;
  uint16_t port_ = 0;
  std::string description_;
  std::vector<UniqueFd> listeners_;
  UniqueFd wake_;
  std::vector<std::unique_ptr<Connection>> connections_;
  Clock::time_point accept_paused_until_;
  std::thread thread_;
};

StoreFront::StoreFront(const StoreFrontOptions& options) : relay_(std::make_unique<Relay>(options)) {}

StoreFront::~StoreFront() = default;

uint16_t StoreFront::port() const { return relay_->port(); }

}  // namespace est::distribute
