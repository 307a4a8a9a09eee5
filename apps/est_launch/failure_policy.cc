#include "apps/est_launch/failure_policy.h"

#include <cerrno>
#include <csignal>

#include "apps/est_launch/task_process.h"
#include "common/error.h"

namespace est_launch {
namespace {

// Once the training has ended, how often the tasks still running are checked (StopStragglers).
constexpr auto kStragglerCheckInterval = std::chrono::milliseconds(500);

}  // namespace

FailurePolicy::FailurePolicy(const HostTasks& cluster, const LaunchOptions& options, PeerNodes* peers,
                             TaskGroup& group)
    : cluster_(cluster), options_(options), peers_(peers), group_(group) {}

bool FailurePolicy::Start(size_t i, int restart_count) {
  try {
    group_.Start(i, restart_count);
    return true;
  } catch (const est::Error& e) {
    const auto* spawn_error = dynamic_cast<const SpawnError*>(&e);
    failure_exit_code_ = spawn_error == nullptr ? 1 : spawn_error->error_number() == ENOENT ? 127 : 126;
    failure_ = cluster_.tasks()[i].label() + ": " + e.what();
    if (peers_ != nullptr) peers_->OnLocalStop(failure_);
    if (!group_.tasks().empty()) {
      group_.Log(failure_ + "; stopping the other tasks");
      group_.BeginStop(SIGTERM, /*leftovers_only=*/false);
    }
    return false;
  }
}

void FailurePolicy::StartDueRestarts() {
  if (group_.phase() != TaskGroup::Phase::kRunning) return;
  for (size_t i = 0; i < group_.tasks().size(); ++i) {
    Task& old = group_.tasks()[i];
    if (!old.restart_at || Clock::now() < *old.restart_at) continue;
    old.restart_at.reset();
    if (options_.min_workers > 0 && TrainingChiefExited()) {
      // It would find no group to join: the training ended.
      group_.Log("not restarting " + old.id.label() + ": the chief has finished the training");
      continue;
    }
    if (!Start(i, old.restarts)) return;
  }
}

// The earliest restart due, if any task waits for one.
std::optional<FailurePolicy::Clock::time_point> FailurePolicy::NextRestart() const {
  std::optional<Clock::time_point> next;
  for (const Task& task : group_.tasks())
    if (task.restart_at && (!next || *task.restart_at < *next)) next = task.restart_at;
  return next;
}

void FailurePolicy::OnTaskExit(Task& task, int status) {
  if (Succeeded(status) && !cluster_.losable_worker(task.id) && task.id.trains()) training_ended_at_ = Clock::now();
  if (Succeeded(status)) return;
  if (task.straggler_since) {  // the job ended without it: not a failure of the job
    group_.Log(task.id.label() + " " + DescribeWaitStatus(status) + " once stopped");
    return;
  }
  const bool losable = options_.min_workers > 0 && cluster_.losable_worker(task.id);
  if (losable && peers_ != nullptr) {
    LoseAcrossHosts(task, status);
    return;
  }
  if (losable) {
    const int running = RunningTrainingTasks();
    const std::string others = "the " + std::to_string(running) + " other training tasks";
    const std::string min_workers = "--min-workers " + std::to_string(options_.min_workers);
    if (single_restarts_ < options_.max_restarts) {
      RestartAlone(task, status,
                   running >= options_.min_workers
                       ? others + " train on without it until it joins them (" + min_workers + ")"
                       : others + " wait for it to join them, as they are fewer than " + min_workers);
      return;
    }
    if (running >= options_.min_workers) {
      group_.Log(task.id.label() + " " + DescribeWaitStatus(status) + "; " + others + " train on without it (" +
                 min_workers + ")");
      return;
    }
  }
  if (cluster_.has_ps() && single_restarts_ < options_.max_restarts) {
    // Parameter servers: the others train on; this task alone starts again.
    RestartAlone(task, status, "the other tasks go on");
    return;
  }
  failure_ = task.id.label() + " " + DescribeWaitStatus(status);
  failure_exit_code_ = 1;
  task_failed_ = true;
  group_.Log(failure_ + "; stopping the other tasks (SIGTERM, then SIGKILL after " +
             SecondsText(options_.grace_secs) + ")");
  if (peers_ != nullptr) peers_->OnLocalStop(failure_);
  group_.BeginStop(SIGTERM, /*leftovers_only=*/false);
}

// Across hosts, with --min-workers: failed worker `task` starts again alone when this host
// has restarts left, and node 0, which counts the training tasks of every host, is told; the
// others train on unless node 0 stops every host for too few left.
void FailurePolicy::LoseAcrossHosts(Task& task, int status) {
  const std::string min_workers = "--min-workers " + std::to_string(options_.min_workers);
  const bool restart = single_restarts_ < options_.max_restarts;
  if (restart)
    RestartAlone(
        task, status,
        "the job's other training tasks train on without it while " + min_workers + " are left, else wait for it");
  else
    group_.Log(task.id.label() + " " + DescribeWaitStatus(status) +
               "; the job's other training tasks train on without it while " + min_workers +
               " are left (node 0 counts them on every host)");
  if (std::optional<std::string> stop = peers_->OnLocalLoss(task.id, restart)) {
    failure_ = *stop;
    failure_exit_code_ = 1;
    task_failed_ = true;
    group_.Log(*stop + "; stopping this host's tasks (SIGTERM, then SIGKILL after " +
               SecondsText(options_.grace_secs) + ")");
    group_.BeginStop(SIGTERM, /*leftovers_only=*/false);
  }
}

// Schedules failed `task` to start again alone after the back-off, one of --max-restarts;
// `others` says what the other tasks do meanwhile.
void FailurePolicy::RestartAlone(Task& task, int status, const std::string& others) {
  ++single_restarts_;
  ++task.restarts;
  const double wait = RestartBackoffSecs(options_, task.restarts);
  task.restart_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait));
  group_.Log(task.id.label() + " " + DescribeWaitStatus(status) + "; restarting it alone in " + SecondsText(wait) +
             " (restart " + std::to_string(single_restarts_) + " of at most " +
             std::to_string(options_.max_restarts) + "; " + others + ")");
}

void FailurePolicy::OnPeerStop(const std::string& reason) {
  if (group_.phase() != TaskGroup::Phase::kRunning) return;
  failure_ = reason;
  failure_exit_code_ = 1;
  task_failed_ = true;
  group_.Log(reason + "; stopping this host's tasks (SIGTERM, then SIGKILL after " +
             SecondsText(options_.grace_secs) + ")");
  group_.BeginStop(SIGTERM, /*leftovers_only=*/false);
}

void FailurePolicy::StopStragglers() {
  if (group_.phase() != TaskGroup::Phase::kRunning || !training_ended_at_) return;
  const auto grace = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.grace_secs));
  const Clock::time_point now = Clock::now();
  if (now < *training_ended_at_ + grace) return;
  for (Task& task : group_.tasks()) {
    if (task.exited || task.restart_at || task.pid < 0) continue;
    if (task.straggler_since) {
      if (!task.straggler_killed && now >= *task.straggler_since + grace && TaskGroup::GroupAlive(task)) {
        group_.Log(task.id.label() + " did not stop within " + SecondsText(options_.grace_secs) +
                   "; sending SIGKILL");
        ::killpg(task.pid, SIGKILL);
        task.straggler_killed = true;
      }
      continue;
    }
    if (task.id.type == TaskType::kEvaluator && !IsStopped(task.pid)) continue;
    group_.Log(task.id.label() + " has not exited " + SecondsText(options_.grace_secs) +
               " after the chief finished the training" + (IsStopped(task.pid) ? " (it is stopped)" : "") +
               ": stopping it (SIGTERM, then SIGKILL after " + SecondsText(options_.grace_secs) + ")");
    TaskGroup::SignalGroup(task, SIGTERM);
    task.straggler_since = now;
  }
}

// When StopStragglers next has something to do, if ever.
std::optional<FailurePolicy::Clock::time_point> FailurePolicy::NextStragglerCheck() const {
  if (group_.phase() != TaskGroup::Phase::kRunning || !training_ended_at_) return std::nullopt;
  for (const Task& task : group_.tasks())
    if (!task.exited && task.pid >= 0) return Clock::now() + kStragglerCheckInterval;
  return std::nullopt;
}

std::optional<FailurePolicy::Clock::time_point> FailurePolicy::NextWake() const {
  std::optional<Clock::time_point> wake = group_.phase() == TaskGroup::Phase::kRunning ? NextRestart() : std::nullopt;
  if (const std::optional<Clock::time_point> check = NextStragglerCheck(); check && (!wake || *check < *wake))
    wake = check;
  return wake;
}

// Whether the chief of training (the chief, else worker 0) has exited.
bool FailurePolicy::TrainingChiefExited() const {
  for (const Task& task : group_.tasks())
    if (task.id.trains() && !cluster_.losable_worker(task.id)) return task.exited;
  return false;
}

// Training tasks (chief and workers) still running.
int FailurePolicy::RunningTrainingTasks() const {
  int running = 0;
  for (const Task& task : group_.tasks())
    if (task.id.trains() && !task.exited) ++running;
  return running;
}

}  // namespace est_launch
