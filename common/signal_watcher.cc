#include "common/signal_watcher.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>

#include "common/error.h"
#include "common/logging.h"

namespace est {
namespace {

// What the handler writes: a signal arrived, or (from the destructor) the watcher ends.
constexpr char kArrived = 1;
constexpr char kEnd = 0;

// The write end of each watched signal's pipe plus one, 0 where none (as the array starts);
// read by the handler.
std::atomic<int> write_fds_plus_one[NSIG];
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free atomic");
// Makes a watcher's look at a signal's action and its taking of it one step for other watchers
// (trainings on several threads of one process).
std::mutex actions_mutex;

void OnSignal(int signal_number) {
  const int saved_errno = errno;
  const int fd = write_fds_plus_one[signal_number].load() - 1;
  if (fd >= 0 && ::write(fd, &kArrived, 1) < 0) {
    // A full pipe already holds an arrival that the watcher has not read: nothing is lost.
  }
  errno = saved_errno;
}

}  // namespace

SignalWatcher::SignalWatcher(int signal_number, std::function<void()> on_signal)
    : signal_number_(signal_number), on_signal_(std::move(on_signal)) {
  EST_CHECK(signal_number > 0 && signal_number < NSIG, ConfigError, "SignalWatcher: signal number must be in [1, ",
            NSIG, "), got ", signal_number);
  const std::lock_guard<std::mutex> lock(actions_mutex);
  struct sigaction current {};
  EST_CHECK(::sigaction(signal_number, nullptr, &current) == 0, Error, "cannot read the action of ",
            SignalName(signal_number), ": ", std::strerror(errno));
  const bool has_default_action = (current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == SIG_DFL;
  if (!has_default_action) return;
  int fds[2];
  EST_CHECK(::pipe2(fds, O_CLOEXEC) == 0, Error, "cannot make a pipe for ", SignalName(signal_number), ": ",
            std::strerror(errno));
  read_fd_ = fds[0];
  write_fd_ = fds[1];
  ::fcntl(write_fd_, F_SETFL, ::fcntl(write_fd_, F_GETFL) | O_NONBLOCK);
  thread_ = std::thread([this] { Watch(); });
  write_fds_plus_one[signal_number].store(write_fd_ + 1);
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  EST_ASSERT(::sigaction(signal_number, &action, nullptr) == 0);
}

SignalWatcher::~SignalWatcher() {
  if (!installed()) return;
  {
    const std::lock_guard<std::mutex> lock(actions_mutex);
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    sigemptyset(&default_action.sa_mask);
    ::sigaction(signal_number_, &default_action, nullptr);
    write_fds_plus_one[signal_number_].store(0);
  }
  // Blocking now: the end must reach the watcher even behind a pipe full of arrivals.
  ::fcntl(write_fd_, F_SETFL, ::fcntl(write_fd_, F_GETFL) & ~O_NONBLOCK);
  while (::write(write_fd_, &kEnd, 1) < 0 && errno == EINTR) {
  }
  thread_.join();
  ::close(read_fd_);
  ::close(write_fd_);
}

void SignalWatcher::Watch() {
  char bytes[64];
  while (true) {
    const ssize_t n = ::read(read_fd_, bytes, sizeof(bytes));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    bool arrived = false;
    for (ssize_t i = 0; i < n; ++i) {
      if (bytes[i] == kEnd) return;
      arrived = true;
    }
    if (!arrived) continue;
    try {
      on_signal_();
    } catch (const std::exception& error) {
      Log().warn("handling {} failed: {}", SignalName(signal_number_), error.what());
    }
  }
}

std::string SignalName(int signal_number) {
  const char* abbreviation = ::sigabbrev_np(signal_number);
  if (abbreviation == nullptr) return "signal " + std::to_string(signal_number);
  return std::string("SIG") + abbreviation;
}

}  // namespace est
