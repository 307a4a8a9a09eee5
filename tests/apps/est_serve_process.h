#pragma once
// est-serve run from a test: started in the background, its stderr in a file, until it listens,
// and waited for.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "common/file_util.h"

namespace est::testing {

/// An est-serve process, its stderr in a file.
struct EstServe {
  pid_t pid = -1;
  std::filesystem::path err;
};

/// Starts est-serve (EST_SERVE_PATH) with `args`, its stderr in DIR/err.
inline EstServe StartEstServe(const std::vector<std::string>& args, const std::filesystem::path& dir) {
  std::vector<std::string> strings{EST_SERVE_PATH};
  strings.insert(strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& arg : strings) argv.push_back(arg.data());
  argv.push_back(nullptr);
  EstServe server{-1, dir / "err"};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, server.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int rc = ::posix_spawn(&server.pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(rc == 0);
  return server;
}

/// The exit status of `server` (-1 when a signal ended it); kills it after 30 s.
inline int WaitForEstServe(const EstServe& server) {
  int status = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (::waitpid(server.pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > give_up) {
      ::kill(server.pid, SIGKILL);
      ::waitpid(server.pid, &status, 0);
      FAIL("est-serve did not exit within 30 s; stderr:\n" << est::ReadFile(server.err.string()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// Waits (60 s at most) until `server` has written DIR/port, which it does once it listens (after
/// DIR/rest_port, where asked for); fails when it exits first.
inline void WaitUntilListening(const EstServe& server, const std::filesystem::path& dir) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!std::filesystem::exists(dir / "port") && std::chrono::steady_clock::now() < give_up) {
    REQUIRE(::waitpid(server.pid, nullptr, WNOHANG) == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(std::filesystem::exists(dir / "port"));
}

}  // namespace est::testing
