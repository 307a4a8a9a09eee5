#include "net/connection_gate.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "common/logging.h"
#include "net/gate_connection.h"
#include "net/gate_socket_directory.h"
#include "net/listen_socket.h"

namespace est::net {
namespace {

using Clock = std::chrono::steady_clock;

/// Connections accepted per wake-up before the others' bytes are relayed.
constexpr int kAcceptsPerWakeup = 256;
/// How long the port is left unwatched when no descriptor is left even to refuse with.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
/// How many peers over a limit are warned of.
constexpr size_t kPeersWarned = 256;
/// Epoll tags: the wake-up eventfd, the listening sockets (1 + their index), then two per
/// connection (its id times two, plus one for the server's side).
constexpr uint64_t kWakeTag = 0;
constexpr uint64_t kFirstConnectionId = 1 << 16;
/// How gRPC names a peer at an abstract Unix address.
constexpr char kAbstractPeerPrefix[] = "unix-abstract:";

/// A quarter of the process's file limit: the most connections a gate holds.
size_t ConnectionsTheFileLimitAllows() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return SIZE_MAX;
  return std::max<size_t>(16, static_cast<size_t>(limit.rlim_cur) / 4);
}

/// The connections of one peer address.
struct PeerConnections {
  size_t count = 0;
  std::set<uint64_t> unopened;  ///< ids of those not yet forwarded, oldest first
};

class ConnectionGateImpl final : public ConnectionGate {
 public:
  ConnectionGateImpl(const std::string& host, uint16_t port, std::string what, ConnectionGateOptions options)
      : what_(std::move(what)),
        options_(options),
        max_connections_(std::min(options.max_connections, ConnectionsTheFileLimitAllows())),
        max_per_peer_(std::min(options.max_connections_per_peer, std::max<size_t>(1, max_connections_ / 2))) {
    EST_CHECK(max_connections_ > 0 && max_per_peer_ > 0, ConfigError, "a connection gate of ", what_,
              " must take at least one connection (max_connections ", options.max_connections,
              ", max_connections_per_peer ", options.max_connections_per_peer, ")");
    listeners_ = ListenTcp(host, port, what_);
    port_ = BoundPort(listeners_.front());
    address_ = HostPort(host, port_);
    try {
      directory_ = MakeGateSocketDirectory(GateDirectoryBase());
      socket_path_ = directory_ + "/grpc.sock";
      epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
      wake_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
      spare_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      EST_CHECK(epoll_ >= 0 && wake_ >= 0 && spare_ >= 0, CommunicationError, "cannot serve ", what_, " at ",
                address_, ": ", std::strerror(errno));
      bool watched = Watch(wake_, kWakeTag, EPOLLIN);
      for (size_t i = 0; i < listeners_.size(); ++i) watched = watched && Watch(listeners_[i], 1 + i, EPOLLIN);
      EST_CHECK(watched, CommunicationError, "cannot serve ", what_, " at ", address_, ": cannot watch its sockets: ",
                std::strerror(errno));
    } catch (...) {
      Release();
      throw;
    }
  }

  ~ConnectionGateImpl() override {
    if (thread_.joinable()) {
      stopping_ = true;
      const uint64_t one = 1;
      [[maybe_unused]] const ssize_t written = ::write(wake_, &one, sizeof(one));
      thread_.join();
    }
    Release();
  }

  std::string server_address() const override { return "unix:" + socket_path_; }
  void open() override {
    if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
  }
  uint16_t port() const override { return port_; }

  std::string peer_of(const std::string& server_peer) const override {
    std::lock_guard<std::mutex> lock(names_mutex_);
    const auto found = names_.find(server_peer);
    return found == names_.end() ? server_peer : found->second;
  }

  ConnectionGateCounts counts() const override {
    ConnectionGateCounts counts;
    counts.accepted = accepted_;
    counts.forwarded = forwarded_;
    counts.not_opened = not_opened_;
    counts.garbage = garbage_;
    counts.over_limit = over_limit_;
    counts.out_of_files = out_of_files_;
    counts.open = open_;
    return counts;
  }

 private:
  void Run() {
    std::vector<epoll_event> events(256);
    while (!stopping_) {
      const int ready = ::epoll_wait(epoll_, events.data(), static_cast<int>(events.size()), WaitMs());
      if (ready < 0 && errno != EINTR) {
        Log().error("{} at {}: waiting for connections failed ({}); it takes no more", what_, address_,
                    std::strerror(errno));
        return;
      }
      for (int i = 0; i < ready; ++i) Dispatch(events[i].data.u64, events[i].events);
      CloseUnopenedPastDeadline();
      ResumeAcceptingWhenDue();
    }
  }

  void Dispatch(uint64_t tag, uint32_t events) {
    if (tag == kWakeTag) {
      uint64_t count = 0;
      [[maybe_unused]] const ssize_t read = ::read(wake_, &count, sizeof(count));
    } else if (tag <= listeners_.size()) {
      Accept(listeners_[tag - 1]);
    } else {
      const uint64_t id = tag / 2;
      auto found = connections_.find(id);
      if (found == connections_.end()) return;  // closed earlier in this batch
      GateConnection& connection = found->second;
      const bool alive =
          tag % 2 == 1 ? connection.relay(Side::kServer, events) : ServeClientSide(id, connection, events);
      if (alive) Rearm(id, connection);
      else Close(id);
    }
  }

  // ---- accepting ----

  void Accept(int listener) {
    for (int i = 0; i < kAcceptsPerWakeup; ++i) {
      sockaddr_storage address{};
      socklen_t length = sizeof(address);
      const int fd = ::accept4(listener, reinterpret_cast<sockaddr*>(&address), &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd >= 0) {
        WarnOfRefusalsWithoutFiles();
        Admit(fd, address);
        continue;
      }
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE) {
        if (EvictOldest(unopened_)) continue;  // a descriptor is free again
        RefuseWithSpare(listener);
        continue;
      }
      return;  // EAGAIN: none left queued
    }
  }

  // Out of descriptors and none to take back: the spare one takes the connection to close it,
  // so that it is refused instead of left queued. Nothing is logged until a descriptor is free
  // again (logging, and sanitizers, may need one).
  void RefuseWithSpare(int listener) {
    if (refused_without_files_ == 0) {
      rlimit limit{};
      ::getrlimit(RLIMIT_NOFILE, &limit);
      file_limit_when_out_ = static_cast<uint64_t>(limit.rlim_cur);
    }
    if (spare_ >= 0) {
      ::close(spare_);
      const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        ++out_of_files_;  // counted before the peer can see the close
        ++refused_without_files_;
        ::close(fd);
      }
      spare_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    }
    if (spare_ < 0) PauseAccepting();
  }

  // Once a connection is accepted again: how many were refused without descriptors, at most
  // once a minute.
  void WarnOfRefusalsWithoutFiles() {
    if (refused_without_files_ == 0 || Clock::now() < next_out_of_files_warning_) return;
    Log().warn("{} at {}: refused {} connection(s) while this process had no file descriptor left (RLIMIT_NOFILE "
               "{}); raise the limit (ulimit -n) if they were the job's",
               what_, address_, refused_without_files_, file_limit_when_out_);
    refused_without_files_ = 0;
    next_out_of_files_warning_ = Clock::now() + std::chrono::minutes(1);
  }

  void PauseAccepting() {
    for (int fd : listeners_) ::epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
    accepting_paused_until_ = Clock::now() + kAcceptPause;
  }

  void ResumeAcceptingWhenDue() {
    if (!accepting_paused_until_ || Clock::now() < *accepting_paused_until_) return;
    accepting_paused_until_.reset();
    if (spare_ < 0) spare_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    bool watched = true;
    for (size_t i = 0; i < listeners_.size(); ++i) watched = Watch(listeners_[i], 1 + i, EPOLLIN) && watched;
    if (!watched) PauseAccepting();  // tried again after the pause
  }

  void Admit(int fd, const sockaddr_storage& address) {
    ++accepted_;
    GateConnection connection;
    connection.peer = PeerText(address, &connection.host);
    connection.client = fd;
    connection.deadline = Clock::now() + options_.opening_timeout;
    if (!MakeRoom(connection.host)) {
      ++over_limit_;  // counted before the peer can see the close
      ::close(fd);
      return;
    }
    const uint64_t id = next_id_++;
    PeerConnections& peer = peers_[connection.host];
    ++peer.count;
    peer.unopened.insert(id);
    unopened_.insert(id);
    GateConnection& held = connections_.emplace(id, std::move(connection)).first->second;
    held.client_events = EPOLLIN;
    ++open_;
    if (!Watch(fd, id * 2, held.client_events)) Close(id);
  }

  // Room for one more connection of `host`: under both limits, or made by closing the oldest
  // connection that has not opened (of this peer, for the per-peer limit). False when there is
  // none to close; the limit is warned of once per peer.
  bool MakeRoom(const std::string& host) {
    auto peer = peers_.find(host);
    if (peer != peers_.end() && peer->second.count >= max_per_peer_ && !EvictOldest(peer->second.unopened)) {
      WarnOverLimit(host, "holds " + std::to_string(max_per_peer_) +
                              " connections, the most one address may (max_connections_per_peer)");
      return false;
    }
    if (connections_.size() >= max_connections_ && !EvictOldest(unopened_)) {
      WarnOverLimit("", "holds " + std::to_string(max_connections_) + " connections, the most it takes");
      return false;
    }
    return true;
  }

  bool EvictOldest(const std::set<uint64_t>& unopened) {
    if (unopened.empty()) return false;
    ++over_limit_;
    Close(*unopened.begin());
    return true;
  }

  void WarnOverLimit(const std::string& host, const std::string& why) {
    if (warned_peers_.size() >= kPeersWarned || !warned_peers_.insert(host).second) return;
    Log().warn("{} at {}: {}{}; its new connections are refused until some close", what_, address_,
               host.empty() ? "the gate " : host + " ", why);
  }

  // ---- relaying ----

  bool ServeClientSide(uint64_t id, GateConnection& connection, uint32_t events) {
    if (connection.forwarded()) return connection.relay(Side::kClient, events);
    if (events & EPOLLERR) return false;
    return !(events & (EPOLLIN | EPOLLHUP)) || ReadOpening(id, connection);
  }

  bool ReadOpening(uint64_t id, GateConnection& connection) {
    char buffer[512];
    const ssize_t count = ::recv(connection.client, buffer, sizeof(buffer), 0);
    if (count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
    if (count <= 0) {
      ++not_opened_;  // closed, or failed, before it opened
      return false;
    }
    connection.opening.append(buffer, static_cast<size_t>(count));
    switch (CheckOpening(connection.opening, options_.tls)) {
      case Opening::kIncomplete:
        return true;
      case Opening::kGarbage:
        ++garbage_;
        return false;
      case Opening::kGrpc:
        return Forward(id, connection);
    }
    return false;
  }

  // Connects the connection to the server from an abstract Unix address that names it, so that
  // peer_of() can tell the server which peer a call came from.
  bool Forward(uint64_t id, GateConnection& connection) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    const std::string name = "est-gate-" + std::to_string(::getpid()) + "-" + std::to_string(id);
    sockaddr_un local{};
    local.sun_family = AF_UNIX;
    std::memcpy(local.sun_path + 1, name.data(), name.size());  // sun_path[0] == 0: abstract
    sockaddr_un server{};
    server.sun_family = AF_UNIX;
    std::memcpy(server.sun_path, socket_path_.c_str(), socket_path_.size() + 1);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&local), static_cast<socklen_t>(sizeof(sa_family_t) + 1 + name.size())) !=
            0 ||
        ::connect(fd, reinterpret_cast<sockaddr*>(&server), sizeof(server)) != 0) {
      Log().warn("{} at {}: cannot pass a connection of {} on to the server: {}", what_, address_, connection.peer,
                 std::strerror(errno));
      ::close(fd);
      return false;
    }
    connection.server = fd;
    connection.name = name;
    connection.to_server.append(connection.opening.data(), connection.opening.size());
    connection.opening.clear();
    connection.opening.shrink_to_fit();
    Unlist(id, connection);
    {
      std::lock_guard<std::mutex> lock(names_mutex_);
      names_.emplace(kAbstractPeerPrefix + name, connection.peer);
    }
    ++forwarded_;
    connection.server_events = EPOLLIN;
    return Watch(fd, id * 2 + 1, connection.server_events) && connection.relay(Side::kServer, EPOLLOUT);
  }

  // Watches what each side can do now (GateConnection::interest).
  void Rearm(uint64_t id, GateConnection& connection) {
    Change(connection.client, id * 2, connection.client_events, connection.interest(Side::kClient));
    if (connection.forwarded())
      Change(connection.server, id * 2 + 1, connection.server_events, connection.interest(Side::kServer));
  }

  void Change(int fd, uint64_t tag, uint32_t& registered, uint32_t wanted) {
    if (registered == wanted) return;
    epoll_event event{};
    event.events = wanted;
    event.data.u64 = tag;
    ::epoll_ctl(epoll_, EPOLL_CTL_MOD, fd, &event);
    registered = wanted;
  }

  // Adds `fd` to the epoll set; false when the kernel refuses (the loop never throws).
  bool Watch(int fd, uint64_t tag, uint32_t events) {
    epoll_event event{};
    event.events = events;
    event.data.u64 = tag;
    return ::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &event) == 0;
  }

  // ---- closing ----

  void CloseUnopenedPastDeadline() {
    const auto now = Clock::now();
    while (!unopened_.empty()) {
      const uint64_t oldest = *unopened_.begin();
      if (connections_.at(oldest).deadline > now) return;
      ++not_opened_;
      Close(oldest);
    }
  }

  // Takes a connection off the lists of those that have not opened.
  void Unlist(uint64_t id, const GateConnection& connection) {
    unopened_.erase(id);
    if (auto peer = peers_.find(connection.host); peer != peers_.end()) peer->second.unopened.erase(id);
  }

  void Close(uint64_t id) {
    auto found = connections_.find(id);
    if (found == connections_.end()) return;
    GateConnection& connection = found->second;
    Unlist(id, connection);
    if (auto peer = peers_.find(connection.host); peer != peers_.end() && --peer->second.count == 0) peers_.erase(peer);
    if (!connection.name.empty()) {
      std::lock_guard<std::mutex> lock(names_mutex_);
      names_.erase(kAbstractPeerPrefix + connection.name);
    }
    ::close(connection.client);
    if (connection.server >= 0) ::close(connection.server);
    connections_.erase(found);
    --open_;
  }

  int WaitMs() const {
    std::optional<Clock::time_point> next = accepting_paused_until_;
    if (!unopened_.empty()) {
      const auto deadline = connections_.at(*unopened_.begin()).deadline;
      next = next ? std::min(*next, deadline) : deadline;
    }
    if (!next) return -1;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(*next - Clock::now()).count();
    return static_cast<int>(std::clamp<int64_t>(left, 0, 60'000));
  }

  void Release() {
    for (auto& [id, connection] : connections_) {
      ::close(connection.client);
      if (connection.server >= 0) ::close(connection.server);
    }
    connections_.clear();
    for (int fd : listeners_) ::close(fd);
    listeners_.clear();
    for (int fd : {epoll_, wake_, spare_})
      if (fd >= 0) ::close(fd);
    epoll_ = wake_ = spare_ = -1;
    if (!socket_path_.empty()) ::unlink(socket_path_.c_str());
    if (!directory_.empty()) ::rmdir(directory_.c_str());
  }

  const std::string what_;
  const ConnectionGateOptions options_;
  const size_t max_connections_;
  const size_t max_per_peer_;
  std::vector<int> listeners_;
  uint16_t port_ = 0;
  std::string address_;  ///< "host:port", for logs
  std::string directory_;
  std::string socket_path_;
  int epoll_ = -1;
  int wake_ = -1;
  int spare_ = -1;  ///< a descriptor held back to refuse connections with when none is left
  std::thread thread_;
  std::atomic<bool> stopping_{false};

  // The loop's own state, touched by its thread alone.
  std::map<uint64_t, GateConnection> connections_;
  std::set<uint64_t> unopened_;  ///< ids of connections not yet forwarded, oldest first
  std::unordered_map<std::string, PeerConnections> peers_;
  std::set<std::string> warned_peers_;
  uint64_t refused_without_files_ = 0;  ///< since the last warning of them
  uint64_t file_limit_when_out_ = 0;
  Clock::time_point next_out_of_files_warning_{};
  std::optional<Clock::time_point> accepting_paused_until_;
  uint64_t next_id_ = kFirstConnectionId;

  mutable std::mutex names_mutex_;
  std::unordered_map<std::string, std::string> names_;  ///< the server's peer of a connection → its peer

  std::atomic<uint64_t> accepted_{0}, forwarded_{0}, not_opened_{0}, garbage_{0}, over_limit_{0}, out_of_files_{0};
  std::atomic<size_t> open_{0};
};

}  // namespace

std::unique_ptr<ConnectionGate> ConnectionGate::Listen(const std::string& host, uint16_t port, const std::string& what,
                                                       ConnectionGateOptions options) {
  return std::make_unique<ConnectionGateImpl>(host, port, what, options);
}

}  // namespace est::net
