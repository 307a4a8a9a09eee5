#pragma once
/// What a failure does to a round of est-launch: every task stopped, the failed task started
/// again alone (clusters with ps tasks, workers with --min-workers), or the others training on
/// without it (--min-workers; across hosts, as node 0 counts); and once the training has ended,
/// the tasks that outlive it stopped.

#include <cstddef>
#include <optional>
#include <string>

#include "apps/est_launch/host_tasks.h"
#include "apps/est_launch/supervisor.h"
#include "apps/est_launch/task_group.h"

namespace est_launch {

/// Decides what each failure of a round's tasks does, acts on it through the round's TaskGroup,
/// and records why the round failed.
class FailurePolicy {
 public:
  using Clock = TaskGroup::Clock;

  /// The policy for the tasks of `cluster` in `group`, with the restarts and --min-workers of
  /// `options`; `peers` (may be null) are the other hosts of a launch across hosts.
  FailurePolicy(const HostTasks& cluster, const LaunchOptions& options, PeerNodes* peers, TaskGroup& group);

  /// Starts task `i` with EST_RESTART_COUNT `restart_count`. When it cannot be started, records
  /// the failure (exit code 127: not found, 126: not executable, else 1), tells the other hosts,
  /// stops the tasks already started and returns false.
  bool Start(size_t i, int restart_count);
  /// Starts again the tasks whose restart alone is due; with --min-workers, not once the chief
  /// of training has exited (they would find no group to join).
  void StartDueRestarts();
  /// Running `task` exited with waitpid() status `status`. A failure stops every task, unless
  /// the task is a worker the others train on without (--min-workers) or restarts alone (ps
  /// tasks, or --min-workers; at most LaunchOptions::max_restarts in all).
  void OnTaskExit(Task& task, int status);
  /// Another host asks this one to stop its tasks, for `reason`: a failure of the job, which
  /// may restart.
  void OnPeerStop(const std::string& reason);
  /// Once the chief of training has finished (exited with status 0), every other task is due to
  /// exit: the workers end their training with the chief's, the ps tasks with the job. One that
  /// has not exited grace_secs later (stopped by SIGSTOP, or cut off from a group that trained
  /// on without it) gets SIGTERM (with SIGCONT), and SIGKILL grace_secs after that, so that
  /// est-launch ends with the job. The evaluator, which evaluates the last checkpoint after the
  /// chief's end, is left to finish unless it is stopped.
  void StopStragglers();
  /// When StartDueRestarts or StopStragglers next has something to do, if ever.
  std::optional<Clock::time_point> NextWake() const;

  /// Why the round failed ("worker 1 exited with status 3"); empty when nothing failed.
  const std::string& failure() const { return failure_; }
  /// The launch's exit code for failure().
  int failure_exit_code() const { return failure_exit_code_; }
  /// Whether a task failed and stopped the round (here or on another host; not a failure to
  /// start one): a round that may be started again.
  bool task_failed() const { return task_failed_; }

 private:
  void LoseAcrossHosts(Task& task, int status);
  void RestartAlone(Task& task, int status, const std::string& others);
  std::optional<Clock::time_point> NextRestart() const;
  std::optional<Clock::time_point> NextStragglerCheck() const;
  bool TrainingChiefExited() const;
  int RunningTrainingTasks() const;

  const HostTasks& cluster_;
  const LaunchOptions& options_;
  PeerNodes* const peers_;  // the other hosts of a launch across hosts, or null
  TaskGroup& group_;
  std::string failure_;
  int failure_exit_code_ = 0;
  bool task_failed_ = false;  // a running task exited with a failure (not a failure to start one)
  int single_restarts_ = 0;   // tasks started again alone (ps tasks, or workers with --min-workers)
  std::optional<Clock::time_point> training_ended_at_;  // when the chief of training exited with status 0
};

}  // namespace est_launch
