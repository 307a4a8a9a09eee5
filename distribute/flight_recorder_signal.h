#pragma once
/// FlightRecorderSignal: a signal that logs the flight recorders of every collective of the
/// process (their last calls, and the one each is inside), for a job that hangs.

#include <memory>

namespace est {
class SignalWatcher;
}  // namespace est

namespace est::distribute {

/// While alive, `signal_number` (0: none) makes every live collective of this process log its
/// flight recorder, from a thread of its own, while the caller's threads may be stuck in a
/// call. The signal is taken only where it has its default action (SignalWatcher).
class FlightRecorderSignal {
 public:
  explicit FlightRecorderSignal(int signal_number);
  ~FlightRecorderSignal();
  FlightRecorderSignal(const FlightRecorderSignal&) = delete;
  FlightRecorderSignal& operator=(const FlightRecorderSignal&) = delete;

 private:
  std::unique_ptr<SignalWatcher> watcher_;
};

}  // namespace est::distribute
