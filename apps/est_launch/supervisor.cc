#include "apps/est_launch/supervisor.h"

#include <poll.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "apps/est_launch/failure_policy.h"
#include "apps/est_launch/signal_pipe.h"
#include "apps/est_launch/task_group.h"
#include "apps/est_launch/task_process.h"

namespace est_launch {
namespace {

using Clock = TaskGroup::Clock;
using Phase = TaskGroup::Phase;

// After a failure or an interrupt, how long est-launch waits for its reader to take the
// output that is still queued before it exits.
constexpr auto kOutputDrainAfterFailure = std::chrono::seconds(5);

// Whether `status` is a task's answer to stop signal `signal_number`: it finished (0),
// stopped on the signal (exit status 128 + it) or was ended by it.
bool StoppedBy(int status, int signal_number) {
  if (WIFEXITED(status)) return WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 128 + signal_number;
  return WIFSIGNALED(status) && WTERMSIG(status) == signal_number;
}

// One round: waits before a restart, starts the tasks, and waits for signals, output and the
// other hosts until every task has exited, passing each failure to the FailurePolicy and
// each interrupt to the tasks.
class Supervisor {
 public:
  Supervisor(const HostTasks& cluster, const LaunchOptions& options, int restarts, SignalPipe& signals,
             PeerNodes* peers)
      : cluster_(cluster),
        options_(options),
        restarts_(restarts),
        signals_(signals),
        peers_(peers),
        group_(cluster, options, signals, [this](Task& task, int status) { OnTaskExit(task, status); }),
        failures_(cluster, options, peers, group_) {}

  /// Runs the round and says how it ended, once est-launch's reader has taken the output (at
  /// most kOutputDrainAfterFailure after a failure).
  LaunchResult Run() {
    if (restarts_ == 0 || WaitBeforeRestart()) Supervise();
    const LaunchResult result = Result();
    if (peers_ != nullptr) {
      // Across hosts, node 0 decides whether the job restarts, and says so.
      if (!result.error.empty()) group_.Log(result.error);
    } else if (will_restart())
      group_.Log(result.error + "; restarting every task in " +
                 SecondsText(RestartBackoffSecs(options_, restarts_ + 1)) + " (restart " +
                 std::to_string(restarts_ + 1) + " of at most " + std::to_string(options_.max_restarts) + ")");
    else if (!result.error.empty())
      group_.Log("error: " + result.error);
    group_.FlushOutput(result.exit_code == 0 ? Clock::time_point::max() : Clock::now() + kOutputDrainAfterFailure);
    return result;
  }

  /// True when this run ended with a failed task and may be started again.
  bool restartable() const { return failures_.task_failed() && interrupt_ == 0 && !group_.gave_up(); }
  /// True when this run ended with a failed task that RunCluster starts again.
  bool will_restart() const { return restartable() && restarts_ < options_.max_restarts; }

 private:
  // Starts every task and supervises them until all have exited and their groups are empty.
  void Supervise() {
    for (size_t i = 0; i < cluster_.tasks().size(); ++i)
      if (!failures_.Start(i, restarts_)) break;
    while (true) {
      group_.Reap();
      failures_.StartDueRestarts();
      group_.StopPsTasksWhenDue();
      failures_.StopStragglers();
      if (group_.phase() == Phase::kRunning && group_.AllExited()) group_.BeginStop(SIGTERM, /*leftovers_only=*/true);
      if (group_.Finished()) return;
      if (group_.phase() != Phase::kRunning && group_.past_deadline()) {
        if (group_.phase() == Phase::kStopping) {
          group_.KillAll("did not stop within " + SecondsText(options_.grace_secs));
        } else {
          group_.GiveUp();
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
        group_.Log("caught " + SignalName(signal_number) + " while waiting to restart; not restarting");
        return false;
      }
    }
    return true;
  }

  // A task exited: while the tasks run, the failure policy decides what that does; while they
  // stop, a stop that the task did not take as a stop is noted (its checkpoint may be missing).
  void OnTaskExit(Task& task, int status) {
    if (group_.phase() == Phase::kRunning) {
      failures_.OnTaskExit(task, status);
      return;
    }
    group_.Log(task.id.label() + " " + DescribeWaitStatus(status));
    if (interrupt_ != 0 && stop_failure_.empty() && !StoppedBy(status, interrupt_))
      stop_failure_ =
          task.id.label() + " " + DescribeWaitStatus(status) + " while stopping on " + SignalName(interrupt_);
  }

  void OnSignal(int signal_number) {
    if (signal_number == SIGCHLD) return;
    if (signal_number == kFlightRecorderSignal) {
      group_.ForwardFlightRecorderSignal("caught");
      if (peers_ != nullptr) peers_->OnLocalFlightRecorderSignal();
      return;
    }
    if (group_.phase() == Phase::kRunning) {
      interrupt_ = signal_number;
      group_.Log("caught " + SignalName(signal_number) + "; forwarding it to the tasks (SIGKILL after " +
                 SecondsText(options_.grace_secs) + ")");
      if (peers_ != nullptr) peers_->OnLocalStop("est-launch caught " + SignalName(signal_number));
      group_.BeginStop(signal_number, /*leftovers_only=*/false);
    } else if (group_.phase() == Phase::kStopping) {
      group_.Log("caught " + SignalName(signal_number) + " while stopping the tasks; sending SIGKILL");
      group_.KillAll(/*reason=*/"");
    }
  }

  // Waits for a signal, output, word from the other hosts, or the next timeout, and handles
  // what arrived.
  void WaitForEvents() {
    std::vector<pollfd> fds{{signals_.fd(), POLLIN, 0}};
    const bool held_back = group_.AddOutputFds(fds);
    const size_t num_streams = fds.size();
    if (peers_ != nullptr)
      for (int fd : peers_->fds()) fds.push_back({fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), group_.PollTimeoutMs(held_back, failures_.NextWake())) <= 0)
      return;  // timeout or EINTR
    if (fds[0].revents != 0)
      for (int signal_number : signals_.drain()) OnSignal(signal_number);
    group_.ReadOutput(fds);
    for (size_t i = num_streams; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      const PeerNodes::News news = peers_->OnReadable();
      if (news.flight_recorder_signal) group_.ForwardFlightRecorderSignal("another host caught");
      if (news.stop) failures_.OnPeerStop(*news.stop);
      break;  // OnReadable reads every peer
    }
  }

  LaunchResult Result() const {
    const std::string stopped = group_.tasks().empty() ? "" : "; stopped the other tasks";
    if (!failures_.failure().empty()) return {failures_.failure_exit_code(), failures_.failure() + stopped};
    if (interrupt_ != 0 && !stop_failure_.empty())
      return {1, "interrupted by " + SignalName(interrupt_) + ", but " + stop_failure_ +
                     ": the job may not have saved its last checkpoint"};
    if (interrupt_ != 0) return {128 + interrupt_, "interrupted by " + SignalName(interrupt_) + "; stopped the tasks"};
    if (group_.gave_up()) return {1, "processes survived SIGKILL (see above)"};
    return {0, ""};
  }

  const HostTasks& cluster_;
  const LaunchOptions& options_;
  const int restarts_;  // restarts made before this run
  SignalPipe& signals_;  // the launch's, caught from the first run to the last
  PeerNodes* const peers_;  // the other hosts of a launch across hosts, or null
  TaskGroup group_;
  FailurePolicy failures_;  // after the group, which it acts through
  int interrupt_ = 0;
  std::string stop_failure_;  // the first task that did not stop cleanly on interrupt_
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
