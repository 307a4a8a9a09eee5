#pragma once
/// Signals as bytes on a pipe (the self-pipe trick), so that one poll() loop waits for
/// child exits, interrupts and output together.

#include <csignal>
#include <initializer_list>
#include <vector>

namespace est_launch {

/// The signal est-launch forwards to its running tasks for a dump of their flight recorders
/// into their logs: the one a TorchEstimator program takes for that while it trains
/// (RunConfig::flight_recorder_signal).
constexpr int kFlightRecorderSignal = SIGUSR1;

/// Installs handlers that write each caught signal's number to a non-blocking pipe, and
/// ignores SIGPIPE (a closed stdout must not kill the supervisor). One instance per
/// process; the destructor restores the previous dispositions.
class SignalPipe {
 public:
  /// Catches `signals` (e.g. SIGCHLD, SIGINT, SIGTERM); throws est::Error if the pipe or a
  /// handler cannot be set up.
  explicit SignalPipe(std::initializer_list<int> signals);
  ~SignalPipe();
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;

  /// The pipe's read end, readable when a signal has arrived.
  int fd() const { return read_fd_; }

  /// Signals caught since the last call, in order of arrival; never blocks.
  std::vector<int> drain();

  /// The signals this instance catches, plus SIGPIPE, which it ignores: a child should
  /// start with the default disposition of each.
  const sigset_t& handled() const { return handled_; }

 private:
  void restore();

  int read_fd_ = -1;
  std::vector<std::pair<int, struct sigaction>> previous_;
  sigset_t handled_;
};

}  // namespace est_launch
