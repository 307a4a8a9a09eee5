// SignalWatcher: a signal that runs a callback on a thread of its own, taken only where it
// has its default action.

#include "common/signal_watcher.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <thread>

namespace signal_watcher_test {
namespace {

using est::SignalWatcher;

// Counts the callback's runs and the threads they ran on; waits for a number of runs.
struct Runs {
  std::mutex mutex;
  std::condition_variable changed;
  int count = 0;
  std::thread::id thread;

  void Run() {
    const std::lock_guard<std::mutex> lock(mutex);
    ++count;
    thread = std::this_thread::get_id();
    changed.notify_all();
  }
  bool WaitFor(int runs) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(10), [&] { return count >= runs; });
  }
};

// The handler of `signal_number` now.
void (*HandlerOf(int signal_number))(int) {
  struct sigaction current {};
  ::sigaction(signal_number, nullptr, &current);
  return current.sa_handler;
}

TEST_CASE("A SignalWatcher runs its callback on a thread of its own, and gives the signal back", "[common]") {
  REQUIRE(HandlerOf(SIGUSR2) == SIG_DFL);
  Runs runs;
  {
    const SignalWatcher watcher(SIGUSR2, [&] { runs.Run(); });
    CHECK(watcher.installed());
    ::raise(SIGUSR2);
    REQUIRE(runs.WaitFor(1));
    CHECK(runs.thread != std::this_thread::get_id());
    // A burst: every arrival is seen, folded into runs while one runs.
    for (int i = 0; i < 100; ++i) ::raise(SIGUSR2);
    REQUIRE(runs.WaitFor(2));
    CHECK(runs.count <= 101);
    {
      const SignalWatcher nested(SIGUSR2, [] { FAIL("the nested watcher must not run"); });
      CHECK_FALSE(nested.installed());
    }
    CHECK(HandlerOf(SIGUSR2) != SIG_DFL);  // still the outer watcher's
  }
  CHECK(HandlerOf(SIGUSR2) == SIG_DFL);
}

TEST_CASE("A SignalWatcher leaves a signal the program handles or ignores alone", "[common]") {
  ::signal(SIGUSR2, SIG_IGN);
  {
    const SignalWatcher watcher(SIGUSR2, [] { FAIL("an ignored signal must stay ignored"); });
    CHECK_FALSE(watcher.installed());
    ::raise(SIGUSR2);
  }
  CHECK(HandlerOf(SIGUSR2) == SIG_IGN);
  ::signal(SIGUSR2, SIG_DFL);
}

TEST_CASE("A SignalWatcher names signals and refuses a number that is none", "[common]") {
  CHECK(est::SignalName(SIGUSR1) == "SIGUSR1");
  CHECK(est::SignalName(SIGTERM) == "SIGTERM");
  CHECK(est::SignalName(SIGRTMIN + 2) == "signal " + std::to_string(SIGRTMIN + 2));
  CHECK_THROWS_WITH(SignalWatcher(0, [] {}), Catch::Contains("signal number must be in [1, "));
}

}  // namespace
}  // namespace signal_watcher_test
