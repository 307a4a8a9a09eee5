#include "common/crash_point.h"

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include "tests/test_util.h"

namespace fs = std::filesystem;
using est::CrashPoint;
using est::testing::FreshTempDir;

namespace {

// Runs `body` in a child process whose environment has EST_CRASH_POINTS_DIR=`dir` (and
// EST_TASK=`task` unless empty); returns its wait status. The crash points read their
// environment once per process, and this process never calls them.
int RunChild(const fs::path& dir, const char* task, const std::function<void()>& body) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setenv("EST_CRASH_POINTS_DIR", dir.c_str(), 1);
    if (*task != '\0') ::setenv("EST_TASK", task, 1);
    else ::unsetenv("EST_TASK");
    body();
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return status;
}

void Touch(const fs::path& path) { std::ofstream(path).put('x'); }

}  // namespace

TEST_CASE("A crash point kills the process once, at the point, step and task its file names", "[common]") {
  const fs::path dir = FreshTempDir("crash_points");
  Touch(dir / "worker-1@after_step@3");
  Touch(dir / "worker-0@after_step@2");

  SECTION("the named task dies with SIGKILL at that step, and the file is used up") {
    const int status = RunChild(dir, "worker-1", [] {
      CrashPoint("after_step", 1);
      CrashPoint("after_step", 2);        // worker-0's step, not ours
      CrashPoint("checkpoint_data", 3);  // another point
      CrashPoint("after_step", 3);
      ::_exit(7);  // not reached
    });
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGKILL);
    CHECK_FALSE(fs::exists(dir / "worker-1@after_step@3"));
    CHECK(fs::exists(dir / "worker-0@after_step@2"));

    // Restarted, the same task passes the same point unharmed.
    const int again = RunChild(dir, "worker-1", [] { CrashPoint("after_step", 3); });
    REQUIRE(WIFEXITED(again));
    CHECK(WEXITSTATUS(again) == 0);
  }
  SECTION("without EST_TASK the task is \"local\"") {
    Touch(dir / "local@checkpoint_state@10");
    const int status = RunChild(dir, "", [] { CrashPoint("checkpoint_state", 10); });
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGKILL);
    CHECK_FALSE(fs::exists(dir / "local@checkpoint_state@10"));
  }
}

TEST_CASE("A crash point named <n>+ fires once, at the first pass at a step of at least n", "[common]") {
  const fs::path dir = FreshTempDir("crash_points_from");
  Touch(dir / "worker-0@after_step@60+");
  Touch(dir / "worker-1@after_step@10+");  // another task's
  Touch(dir / "worker-0@after_stepped@10+");  // another point's
  // Steps 59 and 62 (60 and 61 skipped, as the global step of an asynchronous job can be):
  // the process dies at 62 and the file is used up.
  const int status = RunChild(dir, "worker-0", [&] {
    for (int64_t step : {1, 59}) CrashPoint("after_step", step);
    Touch(dir / "passed-59");
    CrashPoint("after_step", 62);
    ::_exit(7);  // not reached
  });
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  CHECK(fs::exists(dir / "passed-59"));
  CHECK_FALSE(fs::exists(dir / "worker-0@after_step@60+"));
  CHECK(fs::exists(dir / "worker-1@after_step@10+"));
  CHECK(fs::exists(dir / "worker-0@after_stepped@10+"));
  // Restarted, it passes every later step unharmed.
  const int again = RunChild(dir, "worker-0", [] {
    for (int64_t step = 60; step < 100; ++step) CrashPoint("after_step", step);
  });
  REQUIRE(WIFEXITED(again));
  CHECK(WEXITSTATUS(again) == 0);
}

TEST_CASE("Without EST_CRASH_POINTS_DIR crash points do nothing", "[common]") {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::unsetenv("EST_CRASH_POINTS_DIR");
    for (int step = 0; step < 100; ++step) CrashPoint("after_step", step);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
