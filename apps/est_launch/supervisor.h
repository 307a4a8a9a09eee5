#pragma once
/// Running a local cluster: one process per task, their output prefixed and merged, and
/// the rule that when one task fails every other task is stopped, within a bounded time.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "apps/est_launch/host_tasks.h"

namespace est_launch {

class SignalPipe;

/// The other hosts of a launch across hosts (est-launch --nnodes), as the supervisor of this
/// host's tasks sees them: they may ask it to stop its tasks, and it tells them when it stops.
class PeerNodes {
 public:
  virtual ~PeerNodes() = default;
  /// What the other hosts sent, as this host acts on it.
  struct News {
    /// Why this host's tasks must stop (another host's task failed, or its est-launch is gone).
    std::optional<std::string> stop;
    /// Another host's est-launch caught kFlightRecorderSignal: forward it to this host's tasks.
    bool flight_recorder_signal = false;
  };

  /// The descriptors to poll for what the other hosts send.
  virtual std::vector<int> fds() const = 0;
  /// Reads what arrived.
  virtual News OnReadable() = 0;
  /// This host's tasks are being stopped for `reason` (a task failed, est-launch caught a
  /// signal): the other hosts stop theirs.
  virtual void OnLocalStop(const std::string& reason) = 0;
  /// This host's est-launch caught kFlightRecorderSignal: the other hosts forward it to their tasks.
  virtual void OnLocalFlightRecorderSignal() = 0;
  /// This host's worker `task` failed, with --min-workers (LaunchOptions::min_workers), and is
  /// `restarting` alone or not: node 0 counts the training tasks left on every host. Returns
  /// why every host's tasks stop where node 0 decides so at once (fewer than min_workers left,
  /// on node 0); otherwise node 0's decision comes later as a stop (News::stop), or never.
  virtual std::optional<std::string> OnLocalLoss(const TaskId& task, bool restarting) = 0;
};

/// How to run the tasks of a cluster.
struct LaunchOptions {
  /// The program and its arguments, run once per task (PATH is searched).
  std::vector<std::string> command;
  /// Seconds between SIGTERM and SIGKILL when tasks are stopped.
  double grace_secs = 10;
  /// EST_JOB_ID of every task: shared within the launch, different between launches.
  std::string job_id;
  /// EST_JOB_TOKEN of every task: the secret the chief's store asks of every call.
  std::string job_token;
  /// More variables for every task (the EST_TLS_* of the --tls-* flags).
  std::map<std::string, std::string> environment;
  /// The CPUs of each task, in the order of HostTasks::tasks() (see PlanCpuBinding); an
  /// empty list, or no lists at all, leaves a task on est-launch's CPUs. A bound task gets
  /// OMP_NUM_THREADS=<its number of CPUs> unless est-launch's environment sets it.
  std::vector<std::vector<int>> task_cpus;
  /// How many times the whole group is started again after a task fails (torchrun's
  /// --max-restarts): every task is stopped, then every task is started anew, with
  /// EST_RESTART_COUNT set to the number of restarts so far. In a cluster with ps tasks,
  /// the failed task alone is started again (the others train on), each such restart
  /// counting one, with EST_RESTART_COUNT set to that task's restarts.
  int max_restarts = 0;
  /// In-job recovery (all-reduce training): when a worker other than the chief fails and at
  /// least this many training tasks (chief and workers) are still running, the others go on
  /// without it (they re-form their group); 0: a failed task stops every task. Every task gets
  /// it as EST_MIN_WORKERS. Across hosts, node 0 counts the training tasks of every host
  /// (PeerNodes::OnLocalLoss).
  int min_workers = 0;
  /// With min_workers, across hosts, on a node other than node 0: when this est-launch dies,
  /// its workers (not a chief) are killed (SIGKILL) rather than stopped (SIGHUP, on which a
  /// task stops the whole job after a checkpoint). Node 0 counts them lost, and the others
  /// train on without them, as without the workers of a host that is gone.
  bool workers_die_with_launcher = false;
  /// With min_workers: the most training tasks the group may grow to (EST_MAX_WORKERS); 0:
  /// the cluster's. Across hosts, node 0's is the job's.
  int max_workers = 0;
  /// Seconds to wait before the first restart; each later one waits twice the one before,
  /// up to max_restart_backoff_secs (a task that fails at once does not spin).
  double restart_backoff_secs = 1;
  /// The longest wait before a restart.
  double max_restart_backoff_secs = 60;
};

/// Seconds to wait before restart number `restart` (1 for the first):
/// restart_backoff_secs * 2^(restart - 1), at most max_restart_backoff_secs.
double RestartBackoffSecs(const LaunchOptions& options, int restart);

/// "2.5 s": how est-launch's messages write a number of seconds.
std::string SecondsText(double secs);

/// How a launch ended.
struct LaunchResult {
  /// 0 when every task exited with status 0; 1 when a task failed; 126 or 127 when the
  /// command could not be executed (not executable / not found); 128 + N when est-launch
  /// was stopped by signal N.
  int exit_code = 0;
  /// Why it failed; empty on success. RunCluster has written it to stderr already, as the
  /// final line "est-launch: error: <error>".
  std::string error;
};

/// How one start of every task ended (a round: RunCluster makes one per restart).
struct RoundResult {
  /// The round's result, as RunCluster's.
  LaunchResult result;
  /// Whether a restart may follow: a task failed (here or, with peers, on another host) and
  /// est-launch was not interrupted and no process outlived SIGKILL.
  bool restartable = false;
};

/// One round of RunCluster: waits RestartBackoffSecs(options, restarts) when `restarts` > 0,
/// then starts every task of `cluster` with EST_RESTART_COUNT `restarts` and supervises them
/// until all have exited, stopping them when `peers` (may be null) ask it to and telling them
/// when it stops them. `signals` are the launch's (SIGCHLD, SIGINT, SIGTERM, SIGHUP, kFlightRecorderSignal).
RoundResult RunRound(const HostTasks& cluster, const LaunchOptions& options, int restarts, SignalPipe& signals,
                     PeerNodes* peers);

/// Starts `options.command` once per task of `cluster`, each in a process group of its
/// own, with TF_CONFIG, EST_JOB_ID, EST_JOB_TOKEN, EST_TASK ("worker-1") and EST_RESTART_COUNT set and the
/// rest of the environment inherited, on the CPUs of `options.task_cpus`.
/// Every line of a task's stdout (stderr) is written to est-launch's stdout (stderr) with
/// the prefix "[worker 1] ", whole lines at a time.
///
/// Returns when every task has exited and its process group is empty. When a task fails
/// (non-zero status or killed by a signal), or est-launch receives SIGINT, SIGTERM or
/// SIGHUP, every task's process group gets SIGTERM (in a cluster with ps tasks, a failed task
/// with restarts left is started again alone instead) (the caught signal, when forwarding
/// one) and, `grace_secs` later, SIGKILL; a second signal sends SIGKILL at once. Processes
/// that tasks leave behind in their groups are stopped the same way once all tasks have
/// exited. Then, when a task had failed and fewer than `options.max_restarts` restarts
/// were made, every task is started again after RestartBackoffSecs (a failure to start a
/// task, or a signal to est-launch, also during that wait, is not restarted). Progress and failures are logged to stderr as
/// "est-launch: ..." lines.
///
/// Output is written by threads of its own, so a slow reader of est-launch's output never
/// delays stopping the tasks; a task whose output waits (over 1 MiB queued) is not read
/// until the reader catches up. Before returning, RunCluster waits for the reader to take
/// what is queued: without bound on success, for at most 5 s otherwise.
LaunchResult RunCluster(const HostTasks& cluster, const LaunchOptions& options);

}  // namespace est_launch
