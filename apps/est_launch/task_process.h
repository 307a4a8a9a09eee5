#pragma once
/// Starting one task: the command in a process group of its own, stdin from /dev/null,
/// stdout and stderr into pipes that the supervisor reads, and a signal (SIGHUP, or SIGKILL)
/// when the launcher dies (PR_SET_PDEATHSIG), so that no task trains on as an orphan.

#include <signal.h>
#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/signal_watcher.h"

namespace est_launch {

/// The command could not be executed (not found, not executable); the message names it.
class SpawnError : public est::Error {
 public:
  /// `error_number` is the errno of the failed lookup or exec.
  SpawnError(const std::string& message, int error_number) : est::Error(message), error_number_(error_number) {}
  /// The errno of the failed lookup or exec (ENOENT, EACCES, ...).
  int error_number() const { return error_number_; }

 private:
  int error_number_;
};

/// A started task: its process (also its process group's id) and the read ends of its
/// output pipes (non-blocking, close-on-exec), which the caller owns.
struct TaskProcess {
  pid_t pid = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
};

/// The calling process's environment with `overrides` set (replacing inherited values),
/// as "NAME=value" strings.
std::vector<std::string> EnvironmentWith(const std::map<std::string, std::string>& overrides);

/// Starts `command` (searched in PATH when it has no '/') with exactly `environment`, in a
/// new process group whose id is its pid, with stdin from /dev/null, the signals in
/// `default_signals` at their default disposition and no signal blocked, bound to `cpus`
/// (empty: the calling thread's CPUs). The task gets `death_signal` when the calling thread
/// ends (the launcher exits or is killed; again for each other thread it passes to), and
/// exits with 128 + `death_signal` before it starts if that already happened. Throws
/// SpawnError naming the command when it cannot be executed, est::Error for other failures
/// (one names the CPUs it could not bind to).
TaskProcess SpawnTask(const std::vector<std::string>& command, const std::vector<std::string>& environment,
                      const sigset_t& default_signals, const std::vector<int>& cpus, int death_signal = SIGHUP);

/// "SIGTERM", or "signal 42" for a number without a name.
using est::SignalName;

/// Whether process `pid` catches `signal_number` with a handler of its own (/proc/<pid>/status,
/// SigCgt): a signal it does not catch would end it. False when the process is gone.
bool CatchesSignal(pid_t pid, int signal_number);

/// Whether process `pid` is stopped by a signal (SIGSTOP, SIGTSTP: state T in /proc), which
/// only SIGCONT or SIGKILL moves on.
bool IsStopped(pid_t pid);

/// A waitpid() status in words: "exited with status 3", "was killed by SIGKILL".
std::string DescribeWaitStatus(int wait_status);

/// Whether a waitpid() status means success: exited with status 0.
bool Succeeded(int wait_status);

}  // namespace est_launch
