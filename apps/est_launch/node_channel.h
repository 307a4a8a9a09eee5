#pragma once
/// The connection between two est-launch processes of a launch across hosts (--nnodes): TCP
/// carrying one JSON object per line. It stays open while the job runs, so that each side
/// learns at once when the other's est-launch is gone (the kernel closes its socket), and
/// TCP keepalive finds a peer whose whole host is gone (about 25 s).

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace est_launch {

/// One end of a connection between two est-launch processes. Move-only; closes on destruction.
class NodeChannel {
 public:
  using Clock = std::chrono::steady_clock;

  /// Takes `fd` (a connected TCP socket), made non-blocking; `peer` names the other end in messages.
  NodeChannel(int fd, std::string peer);
  NodeChannel(NodeChannel&& other) noexcept;
  NodeChannel& operator=(NodeChannel&& other) noexcept;
  NodeChannel(const NodeChannel&) = delete;
  NodeChannel& operator=(const NodeChannel&) = delete;
  ~NodeChannel();

  /// Connects to host:port, trying again every 0.5 s while the peer refuses or cannot be
  /// reached, until `deadline` or until `interrupted()` says to stop, which is asked whenever
  /// `wake_fd` (the signal pipe) is readable. `on_wait(error)` is called every
  /// `progress_interval` with the last error. Returns nothing on timeout or interrupt; throws
  /// est::ConfigError when `host` does not resolve.
  static std::optional<NodeChannel> Connect(const std::string& host, int port, Clock::time_point deadline, int wake_fd,
                                            const std::function<bool()>& interrupted, Clock::duration progress_interval,
                                            const std::function<void(const std::string&)>& on_wait);

  /// The socket, to poll for input (-1 once closed).
  int fd() const { return fd_; }
  /// The other end, as given at construction ("node 1 (10.0.0.2:41230)").
  const std::string& peer() const { return peer_; }
  /// This end's address as the peer sees it (the address this host reaches the peer from).
  std::string local_host() const;

  /// Sends one message; false when the connection is gone (it is then closed).
  bool Send(const nlohmann::json& message);
  /// The messages that have arrived, whole lines only; never blocks. On end of stream, an
  /// error, a line over 64 KiB or one that is not a JSON object, closes the connection and
  /// records why (closed(), close_reason()).
  std::vector<nlohmann::json> Receive();
  /// Waits until a message arrives (returns it), the connection closes, `deadline` passes or
  /// `interrupt_fd` is readable (these three return nothing).
  std::optional<nlohmann::json> ReceiveOne(Clock::time_point deadline, int interrupt_fd);

  /// True once the connection is closed.
  bool closed() const { return fd_ < 0; }
  /// Why it closed: "the connection closed", "connection reset by peer", ...
  const std::string& close_reason() const { return close_reason_; }
  /// Closes the connection, recording `reason`.
  void Close(const std::string& reason);

 private:
  int fd_ = -1;
  std::string peer_;
  std::string buffer_;
  std::vector<nlohmann::json> pending_;
  std::string close_reason_;
};

/// A listening TCP socket at the rendezvous address of node 0.
class NodeListener {
 public:
  /// Listens at host:port (host must be an address of this machine); throws est::ConfigError
  /// naming the address when it cannot.
  NodeListener(const std::string& host, int port);
  NodeListener(const NodeListener&) = delete;
  NodeListener& operator=(const NodeListener&) = delete;
  ~NodeListener();

  /// The socket, readable when a connection waits.
  int fd() const { return fd_; }
  /// The next waiting connection, if any (never blocks).
  std::optional<NodeChannel> Accept();

 private:
  int fd_ = -1;
};

/// Waits until one of `fds` is readable or `deadline` passes; returns the readable ones.
std::vector<int> WaitReadable(const std::vector<int>& fds, NodeChannel::Clock::time_point deadline);

}  // namespace est_launch
