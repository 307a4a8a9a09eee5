#pragma once
/// Graceful stop on SIGTERM, SIGINT and SIGHUP (preemption, Ctrl-C, a launcher or terminal
/// that is gone): while a StopSignalGuard is alive the signals are recorded instead of
/// ending the process, and the training loop stops at the next step boundary, saves a
/// checkpoint and throws est::Interrupted.

namespace est {

/// Catches SIGTERM, SIGINT and SIGHUP while alive. The first one is recorded (pending()); a
/// second SIGTERM or SIGINT while one is pending restores the default action and re-raises
/// it, so a second Ctrl-C ends the process at once (a repeated SIGHUP does not: the kernel
/// sends a parent-death signal once per thread of a dying launcher). SIGPIPE is ignored meanwhile: writing to an
/// output pipe whose reader has gone fails with EPIPE and never skips the save. Guards
/// nest: the outermost one clears what is pending, installs the handlers, and restores the
/// previous ones when it ends.
class StopSignalGuard {
 public:
  StopSignalGuard();
  ~StopSignalGuard();
  StopSignalGuard(const StopSignalGuard&) = delete;
  StopSignalGuard& operator=(const StopSignalGuard&) = delete;

  /// The stop signal received while a guard was alive (SIGTERM, SIGINT or SIGHUP), 0 when none.
  static int pending();
};

/// "SIGTERM", "SIGINT", "SIGHUP", or "a signal" for any other number.
const char* StopSignalName(int signal_number);

}  // namespace est
