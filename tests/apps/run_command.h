#pragma once
// Running programs from tests.

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <functional>
#include <sstream>
#include <string>

#include "tests/loopback.h"

namespace est::testing {

/// The exit code and the combined stdout and stderr of a command.
struct RunResult {
  int exit_code;
  std::string output;
};

/// Runs a shell command, capturing stdout and stderr together.
inline RunResult RunCommand(const std::string& command_line) {
  const std::string command = command_line + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string output;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

/// Whether `text` contains `part`.
inline bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// The lines of `output` for which `keep` holds, each ending in a newline.
inline std::string LinesWhere(const std::string& output, const std::function<bool(const std::string&)>& keep) {
  std::istringstream lines(output);
  std::string line;
  std::string result;
  while (std::getline(lines, line))
    if (keep(line)) result += line + "\n";
  return result;
}

/// The lines of `output` that start with `prefix` (a launcher's label: "[worker 1] ", "0: ").
inline std::string LinesStartingWith(const std::string& output, const std::string& prefix) {
  return LinesWhere(output, [&](const std::string& line) { return line.rfind(prefix, 0) == 0; });
}

}  // namespace est::testing
