#include "apps/est_launch/supervisor.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apps/est_launch/line_prefixer.h"
#include "apps/est_launch/output_writer.h"
#include "apps/est_launch/signal_pipe.h"
#include "apps/est_launch/task_process.h"

namespace est_launch {
namespace {

using Clock = std::chrono::steady_clock;

// After SIGKILL, how long output may still drain and processes may still be reaped.
constexpr auto kAfterKill = std::chrono::seconds(2);
// While stopping, how often process groups are checked for survivors.
constexpr auto kStopPollInterval = std::chrono::milliseconds(100);
// A task's output is not read while this much of it waits for est-launch's reader.
constexpr size_t kMaxPendingOutput = 1 << 20;
// While output is held back, how often the queues are checked.
constexpr auto kBackpressurePollInterval = std::chrono::milliseconds(20);
// After a failure or an interrupt, how long est-launch waits for its reader to take the
// output that is still queued before it exits.
constexpr auto kOutputDrainAfterFailure = std::chrono::seconds(5);

// One output pipe of a task, the prefixer its bytes go through and where they go.
struct Stream {
  int fd = -1;
  LinePrefixer prefixer;
  const OutputWriter* destination = nullptr;
};

// One task: its process (the leader of its process group) and its two streams.
struct Task {
  TaskId id;
  pid_t pid = -1;
  bool exited = false;
  Stream out;
  Stream err;
  /// Times this task alone was started again (clusters with ps tasks).
  int restarts = 0;
  /// When it is due to start again, while it waits to.
  std::optional<Clock::time_point> restart_at;
  /// When it got SIGTERM for outliving the job's training (Supervisor::StopStragglers).
  std::optional<Clock::time_point> straggler_since;
  /// Whether it got SIGKILL after that.
  bool straggler_killed = false;
};

class Supervisor {
 public:
  Supervisor(const HostTasks& cluster, const LaunchOptions& options, int restarts, SignalPipe& signals,
             PeerNodes* peers)
      : cluster_(cluster),
        options_(options),
        restarts_(restarts),
        signals_(signals),
        peers_(peers),
        stdout_(STDOUT_FILENO),
        stderr_(STDERR_FILENO) {
#if defined(__linux__)
    // Processes orphaned inside a task become our children, so that we reap them and
    // an emptied process group really is empty.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
  }

  LaunchResult Run() {
    if (restarts_ == 0 || WaitBeforeRestart()) Supervise();
    const LaunchResult result = Result();
    if (peers_ != nullptr) {
      // Across hosts, node 0 decides whether the job restarts, and says so.
      if (!result.error.empty()) Log(result.error);
    } else if (will_restart())
      Log(result.error + "; restarting every task in " + SecondsText(RestartBackoffSecs(options_, restarts_ + 1)) +
          " (restart " + std::to_string(restarts_ + 1) + " of at most " + std::to_string(options_.max_restarts) + ")");
    else if (!result.error.empty())
      Log("error: " + result.error);
    const auto drain_deadline =
        result.exit_code == 0 ? Clock::time_point::max() : Clock::now() + kOutputDrainAfterFailure;
    stdout_.flush(drain_deadline);
    stderr_.flush(drain_deadline);
    return result;
  }

  /// True when this run ended with a failed task and may be started again.
  bool restartable() const { return task_failed_ && interrupt_ == 0 && !gave_up_; }
  /// True when this run ended with a failed task that RunCluster starts again.
  bool will_restart() const { return restartable() && restarts_ < options_.max_restarts; }

 private:
  enum class Phase { kRunning, kStopping, kKilling };

  void StartAll() {
    tasks_.reserve(cluster_.tasks().size());
    for (size_t i = 0; i < cluster_.tasks().size(); ++i) {
      std::optional<Task> task = Spawn(i, restarts_);
      if (!task) return;
      tasks_.push_back(std::move(*task));
    }
  }

  // Starts task `i` of the cluster with EST_RESTART_COUNT `restart_count`; on failure records
  // it, stops the tasks already running and returns nothing.
  std::optional<Task> Spawn(size_t i, int restart_count) {
    const TaskId& id = cluster_.tasks()[i];
    const std::vector<int> cpus = i < options_.task_cpus.size() ? options_.task_cpus[i] : std::vector<int>{};
    const std::string prefix = "[" + id.label() + "] ";
    Task task{id,
              -1,
              false,
              {-1, LinePrefixer(prefix, [this](std::string_view s) { stdout_.write(s); }), &stdout_},
              {-1, LinePrefixer(prefix, [this](std::string_view s) { stderr_.write(s); }), &stderr_},
              /*restarts=*/0,
              /*restart_at=*/std::nullopt,
              /*straggler_since=*/std::nullopt,
              /*straggler_killed=*/false};
    try {
      const std::string task_name = TaskTypeName(id.type) + ("-" + std::to_string(id.index));  // "worker-1"
      std::map<std::string, std::string> overrides{{"TF_CONFIG", cluster_.tf_config(id)},
                                                   {"EST_JOB_ID", options_.job_id},
                                                   {"EST_JOB_TOKEN", options_.job_token},
                                                   {"EST_TASK", task_name},
                                                   {"EST_RESTART_COUNT", std::to_string(restart_count)}};
      if (options_.min_workers > 0) overrides.emplace("EST_MIN_WORKERS", std::to_string(options_.min_workers));
      if (options_.max_workers > 0) overrides.emplace("EST_MAX_WORKERS", std::to_string(options_.max_workers));
      overrides.insert(options_.environment.begin(), options_.environment.end());
      // As torchrun does: one OpenMP thread per CPU of the task, unless the user chose.
      if (!cpus.empty() && std::getenv("OMP_NUM_THREADS") == nullptr)
        overrides.emplace("OMP_NUM_THREADS", std::to_string(cpus.size()));
      const int death_signal = options_.workers_die_with_launcher && IsLosableWorker(id) ? SIGKILL : SIGHUP;
      const TaskProcess process =
          SpawnTask(options_.command, EnvironmentWith(overrides), signals_.handled(), cpus, death_signal);
      task.pid = process.pid;
      task.out.fd = process.stdout_fd;
      task.err.fd = process.stderr_fd;
    } catch (const est::Error& e) {
      const auto* spawn_error = dynamic_cast<const SpawnError*>(&e);
      failure_exit_code_ = spawn_error == nullptr ? 1 : spawn_error->error_number() == ENOENT ? 127 : 126;
      failure_ = id.label() + ": " + e.what();
      if (peers_ != nullptr) peers_->OnLocalStop(failure_);
      if (!tasks_.empty()) {
        Log(failure_ + "; stopping the other tasks");
        BeginStop(SIGTERM, /*leftovers_only=*/false);
      }
      return std::nullopt;
    }
    return task;
  }

  // Starts again the tasks whose restart is due (clusters with ps tasks).
  void StartDueRestarts() {
    if (phase_ != Phase::kRunning) return;
    for (size_t i = 0; i < tasks_.size(); ++i) {
      Task& old = tasks_[i];
      if (!old.restart_at || Clock::now() < *old.restart_at) continue;
      if (options_.min_workers > 0 && TrainingChiefExited()) {
        // It would find no group to join: the training ended.
        old.restart_at.reset();
        Log("not restarting " + old.id.label() + ": the chief has finished the training");
        continue;
      }
      CloseStream(old.out);
      CloseStream(old.err);
      const int restarts = old.restarts;
      old.restart_at.reset();
      std::optional<Task> task = Spawn(i, restarts);
      if (!task) return;
      task->restarts = restarts;
      tasks_[i] = std::move(*task);
    }
  }

  // The earliest restart due, if any task waits for one.
  std::optional<Clock::time_point> NextRestart() const {
    std::optional<Clock::time_point> next;
    for (const Task& task : tasks_)
      if (task.restart_at && (!next || *task.restart_at < *next)) next = task.restart_at;
    return next;
  }

  // Starts every task and supervises them until all have exited and their groups are empty.
  void Supervise() {
    StartAll();
    while (true) {
      Reap();
      StartDueRestarts();
      if (ps_stop_signal_ != 0 && TrainingTasksExited()) StopPsTasks();
      StopStragglers();
      if (phase_ == Phase::kRunning && AllExited()) BeginStop(SIGTERM, /*leftovers_only=*/true);
      if (Finished()) return;
      if (phase_ != Phase::kRunning && Clock::now() >= deadline_) {
        if (phase_ == Phase::kStopping) {
          KillAll("did not stop within " + SecondsText(options_.grace_secs));
        } else {
          GiveUp();
          return;
        }
      }
      WaitForEvents();
    }
  }

  // Waits RestartBackoffSecs before the restart; false (the launch interrupted) when a
  // stop signal comes first.
  bool WaitBeforeRestart() {
    const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(RestartBackoffSecs(options_, restarts_)));
    while (Clock::now() < end) {
      pollfd fd{signals_.fd(), POLLIN, 0};
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(end - Clock::now()).count();
      if (::poll(&fd, 1, static_cast<int>(std::max<int64_t>(left, 0))) <= 0) continue;  // timeout or EINTR
      for (int signal_number : signals_.drain()) {
        if (signal_number == SIGCHLD || signal_number == kFlightRecorderSignal) continue;
        interrupt_ = signal_number;
        Log("caught " + SignalName(signal_number) + " while waiting to restart; not restarting");
        return false;
      }
    }
    return true;
  }

  // Collects every exited child: task processes and orphans adopted as subreaper.
  void Reap() {
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      for (Task& task : tasks_)
        if (task.pid == pid) OnTaskExit(task, status);
    }
  }

  void OnTaskExit(Task& task, int status) {
    task.exited = true;
    if (phase_ == Phase::kRunning) {
      if (Succeeded(status) && !IsLosableWorker(task.id) && task.id.trains()) training_ended_at_ = Clock::now();
      if (Succeeded(status)) return;
      if (task.straggler_since) {  // the job ended without it: not a failure of the job
        Log(task.id.label() + " " + DescribeWaitStatus(status) + " once stopped");
        return;
      }
      if (options_.min_workers > 0 && IsLosableWorker(task.id) && peers_ != nullptr) {
        LoseAcrossHosts(task, status);
        return;
      }
      if (options_.min_workers > 0 && IsLosableWorker(task.id)) {
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
          Log(task.id.label() + " " + DescribeWaitStatus(status) + "; " + others + " train on without it (" +
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
      Log(failure_ + "; stopping the other tasks (SIGTERM, then SIGKILL after " + SecondsText(options_.grace_secs) +
          ")");
      if (peers_ != nullptr) peers_->OnLocalStop(failure_);
      BeginStop(SIGTERM, /*leftovers_only=*/false);
    } else {
      Log(task.id.label() + " " + DescribeWaitStatus(status));
      // A stop that a task did not take as a stop: its checkpoint may be missing.
      if (interrupt_ != 0 && stop_failure_.empty() && !StoppedBy(status, interrupt_))
        stop_failure_ = task.id.label() + " " + DescribeWaitStatus(status) + " while stopping on " +
                        SignalName(interrupt_);
    }
  }

  // Across hosts, with --min-workers: failed worker `task` starts again alone when this host
  // has restarts left, and node 0, which counts the training tasks of every host, is told; the
  // others train on unless node 0 stops every host for too few left.
  void LoseAcrossHosts(Task& task, int status) {
    const std::string min_workers = "--min-workers " + std::to_string(options_.min_workers);
    const bool restart = single_restarts_ < options_.max_restarts;
    if (restart)
      RestartAlone(
          task, status,
          "the job's other training tasks train on without it while " + min_workers + " are left, else wait for it");
    else
      Log(task.id.label() + " " + DescribeWaitStatus(status) + "; the job's other training tasks train on without " +
          "it while " + min_workers + " are left (node 0 counts them on every host)");
    if (std::optional<std::string> stop = peers_->OnLocalLoss(task.id, restart)) {
      failure_ = *stop;
      failure_exit_code_ = 1;
      task_failed_ = true;
      Log(*stop + "; stopping this host's tasks (SIGTERM, then SIGKILL after " + SecondsText(options_.grace_secs) +
          ")");
      BeginStop(SIGTERM, /*leftovers_only=*/false);
    }
  }

  // Schedules failed `task` to start again alone after the back-off, one of --max-restarts;
  // `others` says what the other tasks do meanwhile.
  void RestartAlone(Task& task, int status, const std::string& others) {
    ++single_restarts_;
    ++task.restarts;
    const double wait = RestartBackoffSecs(options_, task.restarts);
    task.restart_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait));
    Log(task.id.label() + " " + DescribeWaitStatus(status) + "; restarting it alone in " + SecondsText(wait) +
        " (restart " + std::to_string(single_restarts_) + " of at most " + std::to_string(options_.max_restarts) +
        "; " + others + ")");
  }

  // Whether `status` is a task's answer to stop signal `signal_number`: it finished (0),
  // stopped on the signal (exit status 128 + it) or was ended by it.
  static bool StoppedBy(int status, int signal_number) {
    if (WIFEXITED(status)) return WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 128 + signal_number;
    return WIFSIGNALED(status) && WTERMSIG(status) == signal_number;
  }

  static bool IsPs(const Task& task) { return task.id.type == TaskType::kPs; }

  // Once the chief of training has finished (exited with status 0), every other task is due to
  // exit: the workers end their training with the chief's, the ps tasks with the job. One that
  // has not exited grace_secs later (stopped by SIGSTOP, or cut off from a group that trained
  // on without it) gets SIGTERM (with SIGCONT), and SIGKILL grace_secs after that, so that
  // est-launch ends with the job. The evaluator, which evaluates the last checkpoint after the
  // chief's end, is left to finish unless it is stopped.
  void StopStragglers() {
    if (phase_ != Phase::kRunning || !training_ended_at_) return;
    const auto grace = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.grace_secs));
    const Clock::time_point now = Clock::now();
    if (now < *training_ended_at_ + grace) return;
    for (Task& task : tasks_) {
      if (task.exited || task.restart_at || task.pid < 0) continue;
      if (task.straggler_since) {
        if (!task.straggler_killed && now >= *task.straggler_since + grace && GroupAlive(task)) {
          Log(task.id.label() + " did not stop within " + SecondsText(options_.grace_secs) + "; sending SIGKILL");
          ::killpg(task.pid, SIGKILL);
          task.straggler_killed = true;
        }
        continue;
      }
      if (task.id.type == TaskType::kEvaluator && !IsStopped(task.pid)) continue;
      Log(task.id.label() + " has not exited " + SecondsText(options_.grace_secs) + " after the chief finished the " +
          "training" + (IsStopped(task.pid) ? " (it is stopped)" : "") +
          ": stopping it (SIGTERM, then SIGKILL after " + SecondsText(options_.grace_secs) + ")");
      SignalGroup(task, SIGTERM);
      task.straggler_since = now;
    }
  }

  // When StopStragglers next has something to do, if ever.
  std::optional<Clock::time_point> NextStragglerCheck() const {
    if (phase_ != Phase::kRunning || !training_ended_at_) return std::nullopt;
    for (const Task& task : tasks_)
      if (!task.exited && task.pid >= 0) return Clock::now() + kStopPollInterval * 5;
    return std::nullopt;
  }

  // Whether `id` is a worker the others can train on without (--min-workers): any but the
  // chief of training, which is worker 0 in a cluster without a "chief" job.
  bool IsLosableWorker(const TaskId& id) const {
    return id.type == TaskType::kWorker && (id.index > 0 || cluster_.has_job(TaskType::kChief));
  }

  // Whether the chief of training (the chief, else worker 0) has exited.
  bool TrainingChiefExited() const {
    for (const Task& task : tasks_)
      if (task.id.trains() && !IsLosableWorker(task.id)) return task.exited;
    return false;
  }

  // Training tasks (chief and workers) still running.
  int RunningTrainingTasks() const {
    int running = 0;
    for (const Task& task : tasks_)
      if (task.id.trains() && !task.exited) ++running;
    return running;
  }

  // True when every task but the ps tasks has exited.
  bool TrainingTasksExited() const {
    for (const Task& task : tasks_)
      if (!IsPs(task) && !task.exited && !task.restart_at) return false;
    return true;
  }

  // The second stage of a stop with ps tasks: the training tasks are gone (their last pushes
  // and the chief's last checkpoint done), so the ps tasks get the signal, with a grace of
  // their own.
  void StopPsTasks() {
    const int signal_number = ps_stop_signal_;
    ps_stop_signal_ = 0;
    if (phase_ != Phase::kStopping) return;
    deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(options_.grace_secs));
    for (const Task& task : tasks_)
      if (IsPs(task) && GroupAlive(task)) SignalGroup(task, signal_number);
  }

  // Sends `signal_number` to `task`'s process group, and SIGCONT: a stopped process acts on
  // the signal only once continued.
  static void SignalGroup(const Task& task, int signal_number) {
    ::killpg(task.pid, signal_number);
    ::killpg(task.pid, SIGCONT);
  }

  void OnSignal(int signal_number) {
    if (signal_number == SIGCHLD) return;
    if (signal_number == kFlightRecorderSignal) {
      ForwardFlightRecorderSignal("caught");
      if (peers_ != nullptr) peers_->OnLocalFlightRecorderSignal();
      return;
    }
    if (phase_ == Phase::kRunning) {
      interrupt_ = signal_number;
      Log("caught " + SignalName(signal_number) + "; forwarding it to the tasks (SIGKILL after " +
          SecondsText(options_.grace_secs) + ")");
      if (peers_ != nullptr) peers_->OnLocalStop("est-launch caught " + SignalName(signal_number));
      BeginStop(signal_number, /*leftovers_only=*/false);
    } else if (phase_ == Phase::kStopping) {
      Log("caught " + SignalName(signal_number) + " while stopping the tasks; sending SIGKILL");
      KillAll(/*reason=*/"");
    }
  }

  // Asks each running task that catches kFlightRecorderSignal (a TorchEstimator program while
  // it trains) to log its flight recorders; one that does not catch it would end, and is not
  // sent it. `how` this host got the signal: "caught", or "another host caught".
  void ForwardFlightRecorderSignal(const std::string& how) {
    std::vector<std::string> sent;
    std::vector<std::string> not_sent;
    for (const Task& task : tasks_) {
      if (task.exited || task.pid < 0) continue;
      const bool catches = CatchesSignal(task.pid, kFlightRecorderSignal);
      (catches && ::kill(task.pid, kFlightRecorderSignal) == 0 ? sent : not_sent).push_back(task.id.label());
    }
    const auto list = [](const std::vector<std::string>& names) {
      std::string text;
      for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
      return text;
    };
    std::string message = how + " " + SignalName(kFlightRecorderSignal) + "; ";
    message += sent.empty() ? "no task to forward it to"
                            : "forwarded it to " + list(sent) + " (each logs its flight recorders)";
    if (!not_sent.empty()) message += "; not to " + list(not_sent) + ", where it is not caught (it would end the task)";
    Log(message);
  }

  // Another host asks this one to stop its tasks: a failure of the job, which may restart.
  void OnPeerStop(const std::string& reason) {
    if (phase_ != Phase::kRunning) return;
    failure_ = reason;
    failure_exit_code_ = 1;
    task_failed_ = true;
    Log(reason + "; stopping this host's tasks (SIGTERM, then SIGKILL after " + SecondsText(options_.grace_secs) + ")");
    BeginStop(SIGTERM, /*leftovers_only=*/false);
  }

  bool GroupAlive(const Task& task) const { return ::killpg(task.pid, 0) == 0 || errno == EPERM; }

  // Sends `signal_number` to every task's process group; in a cluster with ps tasks, to the
  // ps tasks only once every other task has exited (StopPsTasks), so that the chief's last
  // pull, push and checkpoint still reach them. With leftovers_only (all tasks have exited)
  // it only reaches groups that still hold processes, and names them.
  void BeginStop(int signal_number, bool leftovers_only) {
    phase_ = Phase::kStopping;
    deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(options_.grace_secs));
    const bool ps_last = !leftovers_only && cluster_.has_ps() && !TrainingTasksExited();
    if (ps_last) ps_stop_signal_ = signal_number;
    for (const Task& task : tasks_) {
      if (!GroupAlive(task) || (ps_last && IsPs(task))) continue;
      if (leftovers_only)
        Log("stopping processes that " + task.id.label() + " left running (" + SignalName(signal_number) + ")");
      SignalGroup(task, signal_number);
    }
  }

  // Sends SIGKILL to every process group that still has processes, logging
  // "<task> <reason>; sending SIGKILL" for each when `reason` is not empty.
  void KillAll(const std::string& reason) {
    Reap();
    phase_ = Phase::kKilling;
    ps_stop_signal_ = 0;
    deadline_ = Clock::now() + kAfterKill;
    for (const Task& task : tasks_) {
      if (!GroupAlive(task)) continue;
      if (!reason.empty()) Log(task.id.label() + " " + reason + "; sending SIGKILL");
      ::killpg(task.pid, SIGKILL);
    }
  }

  // The last resort after SIGKILL: stop reading and waiting, and say what is left.
  void GiveUp() {
    for (Task& task : tasks_) {
      if (!task.exited || GroupAlive(task))
        Log(task.id.label() + " (process group " + std::to_string(task.pid) + ") survived SIGKILL; giving up on it");
      CloseStream(task.out);
      CloseStream(task.err);
    }
    gave_up_ = true;
  }

  bool AllExited() const {
    for (const Task& task : tasks_)
      if (!task.exited || task.restart_at) return false;
    return true;
  }

  bool Finished() const {
    for (const Task& task : tasks_)
      if (!task.exited || task.out.fd >= 0 || task.err.fd >= 0 || GroupAlive(task)) return false;
    return true;
  }

  int PollTimeoutMs(bool held_back) const {
    std::optional<Clock::time_point> restart = phase_ == Phase::kRunning ? NextRestart() : std::nullopt;
    if (const std::optional<Clock::time_point> check = NextStragglerCheck(); check && (!restart || *check < *restart))
      restart = check;
    if (phase_ == Phase::kRunning && !held_back && !restart) return -1;
    Clock::duration wait = held_back ? kBackpressurePollInterval : kStopPollInterval;
    if (phase_ != Phase::kRunning) wait = std::min(wait, deadline_ - Clock::now());
    if (restart) wait = held_back ? std::min(wait, *restart - Clock::now()) : *restart - Clock::now();
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(wait).count();
    return static_cast<int>(std::max<int64_t>(ms, 0));
  }

  // Waits for a signal, output, or the next timeout, and handles what arrived.
  void WaitForEvents() {
    std::vector<pollfd> fds{{signals_.fd(), POLLIN, 0}};
    std::vector<Stream*> streams{nullptr};
    bool held_back = false;
    for (Task& task : tasks_) {
      for (Stream* stream : {&task.out, &task.err}) {
        if (stream->fd < 0) continue;
        // While its processes live, a task blocks on its full pipe until est-launch's reader
        // catches up; once they are gone, what is left in the pipe is read at once.
        if (stream->destination->pending() > kMaxPendingOutput && GroupAlive(task)) {
          held_back = true;
          continue;
        }
        fds.push_back({stream->fd, POLLIN, 0});
        streams.push_back(stream);
      }
    }
    const size_t num_streams = fds.size();
    if (peers_ != nullptr)
      for (int fd : peers_->fds()) fds.push_back({fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), PollTimeoutMs(held_back)) <= 0) return;  // timeout or EINTR
    if (fds[0].revents != 0)
      for (int signal_number : signals_.drain()) OnSignal(signal_number);
    for (size_t i = 1; i < num_streams; ++i)
      if (fds[i].revents != 0) ReadStream(*streams[i]);
    for (size_t i = num_streams; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      const PeerNodes::News news = peers_->OnReadable();
      if (news.flight_recorder_signal) ForwardFlightRecorderSignal("another host caught");
      if (news.stop) OnPeerStop(*news.stop);
      break;  // OnReadable reads every peer
    }
  }

  void ReadStream(Stream& stream) {
    if (stream.fd < 0) return;
    char buffer[64 * 1024];
    const ssize_t n = ::read(stream.fd, buffer, sizeof(buffer));
    if (n > 0) {
      stream.prefixer.append(std::string_view(buffer, static_cast<size_t>(n)));
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      CloseStream(stream);
    }
  }

  static void CloseStream(Stream& stream) {
    if (stream.fd < 0) return;
    stream.prefixer.finish();
    ::close(stream.fd);
    stream.fd = -1;
  }

  LaunchResult Result() const {
    const std::string stopped = tasks_.empty() ? "" : "; stopped the other tasks";
    if (!failure_.empty()) return {failure_exit_code_, failure_ + stopped};
    if (interrupt_ != 0 && !stop_failure_.empty())
      return {1, "interrupted by " + SignalName(interrupt_) + ", but " + stop_failure_ +
                     ": the job may not have saved its last checkpoint"};
    if (interrupt_ != 0) return {128 + interrupt_, "interrupted by " + SignalName(interrupt_) + "; stopped the tasks"};
    if (gave_up_) return {1, "processes survived SIGKILL (see above)"};
    return {0, ""};
  }

  void Log(const std::string& message) { stderr_.write("est-launch: " + message + "\n"); }

  const HostTasks& cluster_;
  const LaunchOptions& options_;
  const int restarts_;  // restarts made before this run
  SignalPipe& signals_;  // the launch's, caught from the first run to the last
  PeerNodes* const peers_;  // the other hosts of a launch across hosts, or null
  OutputWriter stdout_;
  OutputWriter stderr_;
  std::vector<Task> tasks_;  // after the writers, which its prefixers write to
  Phase phase_ = Phase::kRunning;
  Clock::time_point deadline_;
  std::string failure_;
  int failure_exit_code_ = 0;
  int interrupt_ = 0;
  std::string stop_failure_;  // the first task that did not stop cleanly on interrupt_
  int ps_stop_signal_ = 0;    // the signal the ps tasks get once the other tasks have exited
  bool gave_up_ = false;
  bool task_failed_ = false;  // a running task exited with a failure (not a failure to start one)
  int single_restarts_ = 0;   // tasks started again alone (ps tasks, or workers with --min-workers)
  std::optional<Clock::time_point> training_ended_at_;  // when the chief of training exited with status 0
};

}  // namespace

double RestartBackoffSecs(const LaunchOptions& options, int restart) {
  double wait = options.restart_backoff_secs;
  for (int i = 1; i < restart && wait < options.max_restart_backoff_secs; ++i) wait *= 2;
  return std::min(wait, options.max_restart_backoff_secs);
}

RoundResult RunRound(const HostTasks& cluster, const LaunchOptions& options, int restarts, SignalPipe& signals,
                     PeerNodes* peers) {
  Supervisor supervisor(cluster, options, restarts, signals, peers);
  LaunchResult result = supervisor.Run();
  return {std::move(result), supervisor.restartable()};
}

std::string SecondsText(double secs) {
  std::ostringstream out;
  out << secs << " s";
  return out.str();
}

LaunchResult RunCluster(const HostTasks& cluster, const LaunchOptions& options) {
  // One set of handlers for every run: a signal that arrives between one run's end and the
  // next one's wait to restart is caught, and ends the launch there, not by its default action.
  SignalPipe signals({SIGCHLD, SIGINT, SIGTERM, SIGHUP, kFlightRecorderSignal});
  for (int restarts = 0;; ++restarts) {
    RoundResult round = RunRound(cluster, options, restarts, signals, /*peers=*/nullptr);
    if (!round.restartable || restarts >= options.max_restarts) return round.result;
  }
}

}  // namespace est_launch
