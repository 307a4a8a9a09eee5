#include "common/stop_signals.h"

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <string>

using est::StopSignalGuard;

namespace {

volatile sig_atomic_t outer_handler_calls = 0;
void OuterHandler(int) { outer_handler_calls = outer_handler_calls + 1; }

}  // namespace

TEST_CASE("StopSignalGuard records SIGTERM and SIGINT instead of ending the process", "[common]") {
  struct sigaction outer {};
  outer.sa_handler = OuterHandler;
  sigemptyset(&outer.sa_mask);
  struct sigaction saved_term {}, saved_int {};
  REQUIRE(::sigaction(SIGTERM, &outer, &saved_term) == 0);
  REQUIRE(::sigaction(SIGINT, &outer, &saved_int) == 0);
  outer_handler_calls = 0;
  {
    StopSignalGuard guard;
    CHECK(StopSignalGuard::pending() == 0);
    {
      StopSignalGuard nested;  // nested guards share the outer one's handlers
      ::raise(SIGINT);
      CHECK(StopSignalGuard::pending() == SIGINT);
    }
    CHECK(StopSignalGuard::pending() == SIGINT);
    CHECK(outer_handler_calls == 0);
  }
  // The handlers from before the guard are back.
  ::raise(SIGTERM);
  CHECK(outer_handler_calls == 1);
  {
    StopSignalGuard next;  // a new outermost guard starts with nothing pending
    CHECK(StopSignalGuard::pending() == 0);
    ::raise(SIGTERM);
    CHECK(StopSignalGuard::pending() == SIGTERM);
  }
  ::sigaction(SIGTERM, &saved_term, nullptr);
  ::sigaction(SIGINT, &saved_int, nullptr);
}

TEST_CASE("A second stop signal ends the process with that signal", "[common]") {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGINT, SIG_DFL);
    StopSignalGuard guard;
    ::raise(SIGTERM);
    if (StopSignalGuard::pending() != SIGTERM) ::_exit(3);
    ::raise(SIGINT);
    ::_exit(4);  // not reached: the default action of SIGINT ends the process
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGINT);
}

TEST_CASE("Repeated SIGHUPs, as a dying launcher's threads send them, are one stop request, SIGPIPE is ignored",
          "[common]") {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // only async-signal-safe calls and exits in the child
    ::signal(SIGHUP, SIG_DFL);
    ::signal(SIGPIPE, SIG_DFL);
    StopSignalGuard guard;
    for (int i = 0; i < 3; ++i) ::raise(SIGHUP);
    ::raise(SIGPIPE);
    ::_exit(StopSignalGuard::pending() == SIGHUP ? 0 : 3);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(std::string(est::StopSignalName(SIGHUP)) == "SIGHUP");
}
