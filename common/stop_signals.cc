#include "common/stop_signals.h"

#include <atomic>
#include <csignal>
#include <mutex>

#include "common/error.h"

namespace est {
namespace {

// SIGHUP: the launcher (or terminal) is gone; est-launch's tasks get it at its death.
constexpr int kStopSignals[] = {SIGTERM, SIGINT, SIGHUP};

std::atomic<int> pending_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free atomic");

std::mutex guards_mutex;
int guard_depth = 0;  // guarded by guards_mutex
struct sigaction previous_actions[std::size(kStopSignals)];
struct sigaction previous_sigpipe_action;

void RecordStopSignal(int signal_number) {
  int expected = 0;
  if (pending_signal.compare_exchange_strong(expected, signal_number)) return;
  // The kernel sends a parent-death signal again for each thread of the dying launcher
  // that the task is passed to: SIGHUP never insists.
  if (signal_number == SIGHUP) return;
  // A second stop signal: the user insists. Let it do what it does by default.
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  ::sigaction(signal_number, &default_action, nullptr);
  ::raise(signal_number);
}

}  // namespace

StopSignalGuard::StopSignalGuard() {
  std::lock_guard<std::mutex> lock(guards_mutex);
  if (guard_depth++ > 0) return;
  pending_signal.store(0);
  struct sigaction action {};
  action.sa_handler = RecordStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // blocking calls in flight go on; the loop looks between steps
  for (size_t i = 0; i < std::size(kStopSignals); ++i)
    EST_ASSERT(::sigaction(kStopSignals[i], &action, &previous_actions[i]) == 0);
  // A log line to an output pipe whose reader is gone (a launcher that died) must not end
  // the process before its checkpoint: the write fails with EPIPE instead.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  EST_ASSERT(::sigaction(SIGPIPE, &ignore, &previous_sigpipe_action) == 0);
}

StopSignalGuard::~StopSignalGuard() {
  std::lock_guard<std::mutex> lock(guards_mutex);
  if (--guard_depth > 0) return;
  for (size_t i = 0; i < std::size(kStopSignals); ++i) ::sigaction(kStopSignals[i], &previous_actions[i], nullptr);
  ::sigaction(SIGPIPE, &previous_sigpipe_action, nullptr);
}

int StopSignalGuard::pending() { return pending_signal.load(std::memory_order_relaxed); }

const char* StopSignalName(int signal_number) {
  switch (signal_number) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
  }
}

}  // namespace est
