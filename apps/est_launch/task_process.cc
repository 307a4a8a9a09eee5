#include "apps/est_launch/task_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <fstream>

#include "apps/est_launch/cpu_affinity.h"

extern char** environ;

namespace est_launch {
namespace {

// A pipe whose ends close when they go out of scope unless released.
struct Pipe {
  int read_fd = -1;
  int write_fd = -1;
  Pipe() {
    int fds[2];
    EST_CHECK(::pipe2(fds, O_CLOEXEC) == 0, est::Error, "cannot create a pipe: ", std::strerror(errno));
    read_fd = fds[0];
    write_fd = fds[1];
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  ~Pipe() {
    if (read_fd >= 0) ::close(read_fd);
    if (write_fd >= 0) ::close(write_fd);
  }
  int release_read_end() {
    const int fd = read_fd;
    read_fd = -1;
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
  }
};

std::vector<char*> NullTerminated(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (const std::string& s : strings) pointers.push_back(const_cast<char*>(s.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

// The file that executing `name` runs: `name` itself when it has a '/', else the first
// executable `name` in PATH (as execvp searches it). Throws SpawnError when there is none.
std::string ResolveExecutable(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string directories = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  int error = ENOENT;
  size_t start = 0;
  while (start <= directories.size()) {
    const size_t end = std::min(directories.find(':', start), directories.size());
    const std::string directory = end > start ? directories.substr(start, end - start) : ".";
    const std::string candidate = directory + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (errno == EACCES) error = EACCES;
    start = end + 1;
  }
  throw SpawnError("cannot execute '" + name + "': " + std::strerror(error) +
                       (error == ENOENT ? " (not found in PATH)" : ""),
                   error);
}

// Sends errno to the launcher through `report` and ends the child with status 127.
[[noreturn]] void FailTask(int report) {
  const int error = errno;
  [[maybe_unused]] const ssize_t written = ::write(report, &error, sizeof(error));
  ::_exit(127);
}

// In the child, between fork and exec: async-signal-safe calls only. Reports the errno of
// what failed on `report` and ends; does not return.
[[noreturn]] void ExecTask(const char* file, char* const* argv, char* const* envp, pid_t launcher, int stdout_fd,
                           int stderr_fd, const sigset_t& default_signals, int death_signal, int report) {
  const auto fail = [report]() { FailTask(report); };
  // The task gets `death_signal` when the launcher dies, SIGKILL included (SIGHUP: it stops as
  // on SIGTERM, a checkpoint first); a launcher that died before this line is seen here.
  if (::prctl(PR_SET_PDEATHSIG, death_signal) != 0) fail();
  if (::getppid() != launcher) ::_exit(128 + death_signal);
  if (::setpgid(0, 0) != 0) fail();
  const int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd < 0 || ::dup2(null_fd, STDIN_FILENO) < 0) fail();
  if (::dup2(stdout_fd, STDOUT_FILENO) < 0 || ::dup2(stderr_fd, STDERR_FILENO) < 0) fail();
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  for (int signal_number = 1; signal_number < NSIG; ++signal_number) {
    if (sigismember(&default_signals, signal_number) == 1) ::sigaction(signal_number, &default_action, nullptr);
  }
  sigset_t no_signals;
  sigemptyset(&no_signals);
  if (::sigprocmask(SIG_SETMASK, &no_signals, nullptr) != 0) fail();
  ::execve(file, argv, envp);
  FailTask(report);
}

}  // namespace

std::vector<std::string> EnvironmentWith(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string variable(*entry);
    const std::string name = variable.substr(0, variable.find('='));
    if (overrides.count(name) == 0) environment.push_back(variable);
  }
  for (const auto& [name, value] : overrides) environment.push_back(name + "=" + value);
  return environment;
}

TaskProcess SpawnTask(const std::vector<std::string>& command, const std::vector<std::string>& environment,
                      const sigset_t& default_signals, const std::vector<int>& cpus, int death_signal) {
  EST_ASSERT(!command.empty());
  Pipe out;
  Pipe err;
  Pipe report;  // the child's errno when it fails before exec; closed by exec (close-on-exec)
  const std::string file = ResolveExecutable(command[0]);
  std::vector<char*> argv = NullTerminated(command);
  std::vector<char*> envp = NullTerminated(environment);
  const pid_t launcher = ::getpid();
  pid_t pid = -1;
  {
    const ScopedThreadAffinity affinity(cpus);  // the child inherits this thread's CPUs
    pid = ::fork();
    if (pid == 0) {
      ExecTask(file.c_str(), argv.data(), envp.data(), launcher, out.write_fd, err.write_fd, default_signals,
               death_signal, report.write_fd);
    }
  }
  EST_CHECK(pid > 0, est::Error, "cannot start '", command[0], "': fork failed: ", std::strerror(errno));
  ::setpgid(pid, pid);  // as the child does, so that signalling its group never races its start
  ::close(report.write_fd);
  report.write_fd = -1;
  int error = 0;
  ssize_t received;
  do {
    received = ::read(report.read_fd, &error, sizeof(error));
  } while (received < 0 && errno == EINTR);
  if (received == static_cast<ssize_t>(sizeof(error))) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    throw SpawnError("cannot execute '" + command[0] + "': " + std::strerror(error), error);
  }
  return {pid, out.release_read_end(), err.release_read_end()};
}

bool CatchesSignal(pid_t pid, int signal_number) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("SigCgt:", 0) != 0) continue;
    const uint64_t caught = std::stoull(line.substr(7), nullptr, 16);
    return signal_number > 0 && signal_number <= 64 && ((caught >> (signal_number - 1)) & 1) != 0;
  }
  return false;
}

bool IsStopped(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  // "pid (comm) S ...": the state follows the last ')', as comm may hold any byte.
  const size_t close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'T';
}

std::string DescribeWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status))
    return "was killed by " + SignalName(WTERMSIG(wait_status)) + (WCOREDUMP(wait_status) ? " (core dumped)" : "");
  return "ended with wait status " + std::to_string(wait_status);
}

bool Succeeded(int wait_status) { return WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0; }

}  // namespace est_launch
