#pragma once
/// The processes of one round of est-launch: one per task, each in a process group of its own,
/// their output read and written with a prefix, and the groups stopped (SIGTERM, then SIGKILL
/// after the grace) and reaped. What a task's exit means is decided elsewhere (FailurePolicy).

#include <poll.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "apps/est_launch/host_tasks.h"
#include "apps/est_launch/line_prefixer.h"
#include "apps/est_launch/output_writer.h"
#include "apps/est_launch/supervisor.h"

namespace est_launch {

class SignalPipe;

/// One output pipe of a task, the prefixer its bytes go through and where they go.
struct TaskStream {
  /// The pipe's read end; -1 once closed.
  int fd = -1;
  /// Adds the task's prefix ("[worker 1] ") to each line on its way to `destination`.
  LinePrefixer prefixer;
  /// est-launch's stdout or stderr.
  const OutputWriter* destination = nullptr;
};

/// One task of a round: its process (the leader of its process group), its two streams, and
/// what its failures have scheduled for it.
struct Task {
  /// Which task of the cluster it is.
  TaskId id;
  /// Its process, also its process group's id.
  pid_t pid = -1;
  /// Whether its process has exited (and been reaped).
  bool exited = false;
  /// Its stdout.
  TaskStream out;
  /// Its stderr.
  TaskStream err;
  /// Times this task alone was started again (clusters with ps tasks).
  int restarts = 0;
  /// When it is due to start again, while it waits to.
  std::optional<std::chrono::steady_clock::time_point> restart_at;
  /// When it got SIGTERM for outliving the job's training (FailurePolicy::StopStragglers).
  std::optional<std::chrono::steady_clock::time_point> straggler_since;
  /// Whether it got SIGKILL after that.
  bool straggler_killed = false;
};

/// The task processes of one round and their output: starting them, reaping them, and stopping
/// their process groups in phases (SIGTERM, SIGKILL after the grace, then giving up).
class TaskGroup {
 public:
  using Clock = std::chrono::steady_clock;
  /// Where a stop stands: none yet, the stop signal sent (until the grace ends), SIGKILL sent.
  enum class Phase { kRunning, kStopping, kKilling };
  /// Told of each task's exit (Task::exited already set), with its waitpid() status.
  using ExitHandler = std::function<void(Task& task, int status)>;

  /// The processes of `cluster`'s tasks, run with `options`, each with the default disposition
  /// of `signals` (the launch's); `on_exit` is told of every exit. Makes est-launch the
  /// subreaper of processes orphaned inside a task, so that an emptied group really is empty.
  TaskGroup(const HostTasks& cluster, const LaunchOptions& options, SignalPipe& signals, ExitHandler on_exit);

  /// The tasks started so far, in the cluster's order.
  std::vector<Task>& tasks() { return tasks_; }
  /// The tasks started so far, in the cluster's order.
  const std::vector<Task>& tasks() const { return tasks_; }
  /// Where a stop stands.
  Phase phase() const { return phase_; }
  /// Whether the deadline of the stop's phase has passed.
  bool past_deadline() const { return Clock::now() >= deadline_; }
  /// Whether processes survived SIGKILL and were given up on (GiveUp).
  bool gave_up() const { return gave_up_; }

  /// Starts task `i` of the cluster with EST_RESTART_COUNT `restart_count`: the next one, or
  /// again one that has exited (its streams closed first; its Task::restarts kept). Throws
  /// est::Error (SpawnError when the command cannot be executed) when it cannot be started.
  void Start(size_t i, int restart_count);
  /// Collects every exited child, task processes and orphans adopted as subreaper, and tells
  /// the exit handler of each task's.
  void Reap();

  /// Sends `signal_number` to every task's process group; in a cluster with ps tasks, to the
  /// ps tasks only once every other task has exited (StopPsTasksWhenDue), so that the chief's
  /// last pull, push and checkpoint still reach them. With leftovers_only (all tasks have
  /// exited) it only reaches groups that still hold processes, and names them.
  void BeginStop(int signal_number, bool leftovers_only);
  /// The second stage of a stop with ps tasks: once the training tasks are gone (their last
  /// pushes and the chief's last checkpoint done), the ps tasks get the signal, with a grace
  /// of their own.
  void StopPsTasksWhenDue();
  /// Sends SIGKILL to every process group that still has processes, logging
  /// "<task> <reason>; sending SIGKILL" for each when `reason` is not empty.
  void KillAll(const std::string& reason);
  /// The last resort after SIGKILL: stop reading and waiting, and say what is left.
  void GiveUp();

  /// Sends `signal_number` to `task`'s process group, and SIGCONT: a stopped process acts on
  /// the signal only once continued.
  static void SignalGroup(const Task& task, int signal_number);
  /// Whether `task`'s process group still holds processes.
  static bool GroupAlive(const Task& task);
  /// Asks each running task that catches kFlightRecorderSignal (a TorchEstimator program while
  /// it trains) to log its flight recorders; one that does not catch it would end, and is not
  /// sent it. `how` this host got the signal: "caught", or "another host caught".
  void ForwardFlightRecorderSignal(const std::string& how);

  /// True when every task has exited and none waits to start again.
  bool AllExited() const;
  /// True when every task has exited, its streams are closed and its process group is empty.
  bool Finished() const;

  /// Adds to `fds` each open output pipe to poll for reading. A pipe with over 1 MiB of its
  /// output waiting for est-launch's reader is left out while its task's processes live (they
  /// block on the full pipe until the reader catches up); returns whether one was.
  bool AddOutputFds(std::vector<pollfd>& fds) const;
  /// Reads each output pipe that `polled` (after poll()) finds readable; its other descriptors
  /// (not output pipes) are left to the caller.
  void ReadOutput(const std::vector<pollfd>& polled);
  /// How long the next poll may wait: while the tasks run, until `wake` (when something else
  /// is due), without bound when nothing is; shorter while output is `held_back` or a stop's
  /// process groups are checked.
  int PollTimeoutMs(bool held_back, std::optional<Clock::time_point> wake) const;

  /// Writes "est-launch: <message>" to est-launch's stderr, in order with the tasks' output.
  void Log(const std::string& message);
  /// Waits until the output queued for est-launch's stdout and stderr is written, or `deadline`.
  void FlushOutput(Clock::time_point deadline);

 private:
  Task Spawn(size_t i, int restart_count);
  bool TrainingTasksExited() const;
  bool ReadStream(TaskStream& stream);
  void DrainStream(TaskStream& stream);
  static void CloseStream(TaskStream& stream);
  static bool IsPs(const Task& task);

  const HostTasks& cluster_;
  const LaunchOptions& options_;
  SignalPipe& signals_;  // the launch's, caught from the first round to the last
  ExitHandler on_exit_;
  OutputWriter stdout_;
  OutputWriter stderr_;
  std::vector<Task> tasks_;  // after the writers, which its prefixers write to
  Phase phase_ = Phase::kRunning;
  Clock::time_point deadline_;
  int ps_stop_signal_ = 0;  // the signal the ps tasks get once the other tasks have exited
  bool gave_up_ = false;
};

}  // namespace est_launch
