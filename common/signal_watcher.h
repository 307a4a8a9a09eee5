#pragma once
/// SignalWatcher: a signal that runs a callback on a thread of its own, for what must happen
/// while every other thread may be stuck (a dump of the flight recorders on SIGUSR1).

#include <functional>
#include <string>
#include <thread>

namespace est {

/// While alive, runs `on_signal` on a thread of its own each time `signal_number` arrives
/// (arrivals while it runs are folded into one more run). It takes the signal only where the
/// signal has its default action: a handler of the program's own, an ignored signal, or an
/// outer SignalWatcher of the same signal is left alone (installed() is false). The
/// destructor restores the previous action and joins the thread.
class SignalWatcher {
 public:
  /// Throws est::Error when the thread or its pipe cannot be made.
  SignalWatcher(int signal_number, std::function<void()> on_signal);
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

  /// Whether this watcher took the signal.
  bool installed() const { return read_fd_ >= 0; }

 private:
  void Watch();

  int signal_number_;
  std::function<void()> on_signal_;
  int read_fd_ = -1;  ///< the pipe's read end, where this watcher took the signal; else -1
  int write_fd_ = -1;
  std::thread thread_;
};

/// "SIGUSR1": the signal's abbreviation, or "signal 42" for a number without one.
std::string SignalName(int signal_number);

}  // namespace est
