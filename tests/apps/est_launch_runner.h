#pragma once
// Running est-launch from tests: started with its output in files, waited for with a bound.

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/apps/run_command.h"
#include "tests/test_util.h"

extern char** environ;

namespace est::testing {

namespace launch_fs = std::filesystem;

/// An est-launch process started by a test, with stdout and stderr going to files.
struct Launch {
  pid_t pid = -1;
  launch_fs::path dir;
  std::chrono::steady_clock::time_point started;
};

/// How an est-launch run ended.
struct LaunchRun {
  int exit_code = -1;  // -1 when killed by a signal
  std::string out;
  std::string err;
  double seconds = 0;
};

/// The whole text of a file ("" when it cannot be read).
inline std::string ReadFile(const launch_fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The lines of `text`, without their newlines.
inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

/// Starts est-launch with `args`; its output goes to files in a fresh directory `dir`
/// (stdout to `stdout_path` when given).
inline Launch Start(const std::vector<std::string>& args, const launch_fs::path& dir,
                    const launch_fs::path& stdout_path = {}) {
  std::vector<std::string> argv_strings{EST_LAUNCH_PATH};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& arg : argv_strings) argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const launch_fs::path out = stdout_path.empty() ? dir / "out" : stdout_path;
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, (dir / "err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  Launch launch{-1, dir, std::chrono::steady_clock::now()};
  const int rc = ::posix_spawn(&launch.pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(rc == 0);
  return launch;
}

/// Waits for est-launch to exit; kills it and fails the test after `timeout_secs`.
inline LaunchRun Finish(const Launch& launch, double timeout_secs = 15) {
  int status = 0;
  while (::waitpid(launch.pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() - launch.started > std::chrono::duration<double>(timeout_secs)) {
      ::kill(launch.pid, SIGKILL);
      ::waitpid(launch.pid, &status, 0);
      FAIL("est-launch did not exit within " << timeout_secs << " s; stderr:\n" << ReadFile(launch.dir / "err"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  LaunchRun run;
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - launch.started).count();
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = ReadFile(launch.dir / "out");
  run.err = ReadFile(launch.dir / "err");
  return run;
}

/// Runs est-launch with `args` to its end, its output in a fresh directory named after `name`.
inline LaunchRun RunLaunch(const std::vector<std::string>& args, const std::string& name) {
  return Finish(Start(args, est::testing::FreshTempDir(name)));
}

/// Task label ("worker 1") -> the lines it printed, without the prefix.
inline std::map<std::string, std::vector<std::string>> ByTask(const std::string& output) {
  static const std::regex prefixed(R"(^\[((?:chief|worker|ps|evaluator) \d+)\] (.*)$)");
  std::map<std::string, std::vector<std::string>> lines;
  for (const std::string& line : Lines(output)) {
    std::smatch match;
    if (std::regex_match(line, match, prefixed)) lines[match[1]].push_back(match[2]);
  }
  return lines;
}

/// Sets an environment variable (unsets it for nullptr) until the end of the scope; est-launch
/// started meanwhile inherits it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value == nullptr ? ::unsetenv(name) : ::setenv(name, value, 1);
  }
  ~ScopedEnv() { old_.empty() ? ::unsetenv(name_.c_str()) : ::setenv(name_.c_str(), old_.c_str(), 1); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::string old_;
};

}  // namespace est::testing
