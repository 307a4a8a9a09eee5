#include "apps/est_launch/task_process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

// posix_spawn's attribute and file-action objects, destroyed at scope exit.
struct SpawnSetup {
  posix_spawnattr_t attributes;
  posix_spawn_file_actions_t actions;
  SpawnSetup() {
    posix_spawnattr_init(&attributes);
    posix_spawn_file_actions_init(&actions);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
  }
};

std::vector<char*> NullTerminated(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (const std::string& s : strings) pointers.push_back(const_cast<char*>(s.c_str()));
  pointers.push_back(nullptr);
  return pointers;
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
                      const sigset_t& default_signals, const std::vector<int>& cpus) {
  EST_ASSERT(!command.empty());
  Pipe out;
  Pipe err;
  SpawnSetup setup;
  sigset_t no_signals;
  sigemptyset(&no_signals);
  // The pipe ends are close-on-exec; their copies on fds 1 and 2 are not.
  int rc = posix_spawn_file_actions_addopen(&setup.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  if (rc == 0) rc = posix_spawn_file_actions_adddup2(&setup.actions, out.write_fd, STDOUT_FILENO);
  if (rc == 0) rc = posix_spawn_file_actions_adddup2(&setup.actions, err.write_fd, STDERR_FILENO);
  if (rc == 0)
    rc = posix_spawnattr_setflags(&setup.attributes,
                                  POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  if (rc == 0) rc = posix_spawnattr_setpgroup(&setup.attributes, 0);
  if (rc == 0) rc = posix_spawnattr_setsigdefault(&setup.attributes, &default_signals);
  if (rc == 0) rc = posix_spawnattr_setsigmask(&setup.attributes, &no_signals);
  EST_CHECK(rc == 0, est::Error, "cannot prepare to start '", command[0], "': ", std::strerror(rc));

  std::vector<char*> argv = NullTerminated(command);
  std::vector<char*> envp = NullTerminated(environment);
  pid_t pid = -1;
  {
    const ScopedThreadAffinity affinity(cpus);  // the child inherits this thread's CPUs
    rc = ::posix_spawnp(&pid, argv[0], &setup.actions, &setup.attributes, argv.data(), envp.data());
  }
  if (rc != 0) {
    const bool searched = command[0].find('/') == std::string::npos;
    throw SpawnError("cannot execute '" + command[0] + "': " + std::strerror(rc) +
                         (rc == ENOENT && searched ? " (not found in PATH)" : ""),
                     rc);
  }
  return {pid, out.release_read_end(), err.release_read_end()};
}

std::string SignalName(int signal_number) {
  switch (signal_number) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    default: return "signal " + std::to_string(signal_number);
  }
}

std::string DescribeWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status))
    return "was killed by " + SignalName(WTERMSIG(wait_status)) + (WCOREDUMP(wait_status) ? " (core dumped)" : "");
  return "ended with wait status " + std::to_string(wait_status);
}

bool Succeeded(int wait_status) { return WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0; }

}  // namespace est_launch
