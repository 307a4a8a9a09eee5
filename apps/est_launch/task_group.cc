#include "apps/est_launch/task_group.h"

#include <sys/wait.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string_view>
#include <utility>

#include "apps/est_launch/signal_pipe.h"
#include "apps/est_launch/task_process.h"

namespace est_launch {
namespace {

// After SIGKILL, how long output may still drain and processes may still be reaped.
constexpr auto kAfterKill = std::chrono::seconds(2);
// While stopping, how often process groups are checked for survivors.
constexpr auto kStopPollInterval = std::chrono::milliseconds(100);
// A task's output is not read while this much of it waits for est-launch's reader.
constexpr size_t kMaxPendingOutput = 1 << 20;
// While output is held back, how often the queues are checked.
constexpr auto kBackpressurePollInterval = std::chrono::milliseconds(20);

}  // namespace

TaskGroup::TaskGroup(const HostTasks& cluster, const LaunchOptions& options, SignalPipe& signals,
                     ExitHandler on_exit)
    : cluster_(cluster),
      options_(options),
      signals_(signals),
      on_exit_(std::move(on_exit)),
      stdout_(STDOUT_FILENO),
      stderr_(STDERR_FILENO) {
#if defined(__linux__)
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
  tasks_.reserve(cluster_.tasks().size());
}

void TaskGroup::Start(size_t i, int restart_count) {
  if (i < tasks_.size()) {  // a restart: the run before's last lines may still be in its pipes
    DrainStream(tasks_[i].out);
    DrainStream(tasks_[i].err);
  }
  Task task = Spawn(i, restart_count);
  if (i < tasks_.size()) {
    task.restarts = tasks_[i].restarts;
    tasks_[i] = std::move(task);
  } else {
    tasks_.push_back(std::move(task));
  }
}

// Starts task `i`'s process with its environment and CPUs; throws as SpawnTask does.
Task TaskGroup::Spawn(size_t i, int restart_count) {
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
  const int death_signal = options_.workers_die_with_launcher && cluster_.losable_worker(id) ? SIGKILL : SIGHUP;
  const TaskProcess process =
      SpawnTask(options_.command, EnvironmentWith(overrides), signals_.handled(), cpus, death_signal);
  task.pid = process.pid;
  task.out.fd = process.stdout_fd;
  task.err.fd = process.stderr_fd;
  return task;
}

void TaskGroup::Reap() {
  int status = 0;
  pid_t pid;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
    for (Task& task : tasks_) {
      if (task.pid != pid) continue;
      task.exited = true;
      on_exit_(task, status);
    }
  }
}

void TaskGroup::BeginStop(int signal_number, bool leftovers_only) {
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

void TaskGroup::StopPsTasksWhenDue() {
  if (ps_stop_signal_ == 0 || !TrainingTasksExited()) return;
  const int signal_number = ps_stop_signal_;
  ps_stop_signal_ = 0;
  if (phase_ != Phase::kStopping) return;
  deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(options_.grace_secs));
  for (const Task& task : tasks_)
    if (IsPs(task) && GroupAlive(task)) SignalGroup(task, signal_number);
}

void TaskGroup::KillAll(const std::string& reason) {
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

void TaskGroup::GiveUp() {
  for (Task& task : tasks_) {
    if (!task.exited || GroupAlive(task))
      Log(task.id.label() + " (process group " + std::to_string(task.pid) + ") survived SIGKILL; giving up on it");
    CloseStream(task.out);
    CloseStream(task.err);
  }
  gave_up_ = true;
}

void TaskGroup::SignalGroup(const Task& task, int signal_number) {
  ::killpg(task.pid, signal_number);
  ::killpg(task.pid, SIGCONT);
}

bool TaskGroup::GroupAlive(const Task& task) { return ::killpg(task.pid, 0) == 0 || errno == EPERM; }

void TaskGroup::ForwardFlightRecorderSignal(const std::string& how) {
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

bool TaskGroup::AllExited() const {
  for (const Task& task : tasks_)
    if (!task.exited || task.restart_at) return false;
  return true;
}

bool TaskGroup::Finished() const {
  for (const Task& task : tasks_)
    if (!task.exited || task.out.fd >= 0 || task.err.fd >= 0 || GroupAlive(task)) return false;
  return true;
}

// True when every task but the ps tasks has exited.
bool TaskGroup::TrainingTasksExited() const {
  for (const Task& task : tasks_)
    if (!IsPs(task) && !task.exited && !task.restart_at) return false;
  return true;
}

bool TaskGroup::AddOutputFds(std::vector<pollfd>& fds) const {
  bool held_back = false;
  for (const Task& task : tasks_) {
    for (const TaskStream* stream : {&task.out, &task.err}) {
      if (stream->fd < 0) continue;
      // While its processes live, a task blocks on its full pipe until est-launch's reader
      // catches up; once they are gone, what is left in the pipe is read at once.
      if (stream->destination->pending() > kMaxPendingOutput && GroupAlive(task)) {
        held_back = true;
        continue;
      }
      fds.push_back({stream->fd, POLLIN, 0});
    }
  }
  return held_back;
}

void TaskGroup::ReadOutput(const std::vector<pollfd>& polled) {
  for (const pollfd& fd : polled) {
    if (fd.revents == 0) continue;
    for (Task& task : tasks_)
      for (TaskStream* stream : {&task.out, &task.err})
        if (stream->fd == fd.fd) ReadStream(*stream);
  }
}

int TaskGroup::PollTimeoutMs(bool held_back, std::optional<Clock::time_point> wake) const {
  if (phase_ == Phase::kRunning && !held_back && !wake) return -1;
  Clock::duration wait = held_back ? kBackpressurePollInterval : kStopPollInterval;
  if (phase_ != Phase::kRunning) wait = std::min(wait, deadline_ - Clock::now());
  if (wake) wait = held_back ? std::min(wait, *wake - Clock::now()) : *wake - Clock::now();
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(wait).count();
  return static_cast<int>(std::max<int64_t>(ms, 0));
}

// Passes on what `stream` holds; closes it at its end or on an error. True when it passed on bytes.
bool TaskGroup::ReadStream(TaskStream& stream) {
  if (stream.fd < 0) return false;
  char buffer[64 * 1024];
  const ssize_t n = ::read(stream.fd, buffer, sizeof(buffer));
  if (n > 0) {
    stream.prefixer.append(std::string_view(buffer, static_cast<size_t>(n)));
    return true;
  }
  if (n == 0 || (errno != EAGAIN && errno != EINTR)) CloseStream(stream);
  return false;
}

// Passes on everything `stream`'s pipe holds now (the pipe does not block), then closes it.
void TaskGroup::DrainStream(TaskStream& stream) {
  while (ReadStream(stream)) {
  }
  CloseStream(stream);
}

// Passes on a partial last line and closes the pipe.
void TaskGroup::CloseStream(TaskStream& stream) {
  if (stream.fd < 0) return;
  stream.prefixer.finish();
  ::close(stream.fd);
  stream.fd = -1;
}

bool TaskGroup::IsPs(const Task& task) { return task.id.type == TaskType::kPs; }

void TaskGroup::Log(const std::string& message) { stderr_.write("est-launch: " + message + "\n"); }

void TaskGroup::FlushOutput(Clock::time_point deadline) {
  stdout_.flush(deadline);
  stderr_.flush(deadline);
}

}  // namespace est_launch
