#pragma once
/// Helpers shared by the tests.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <exception>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "common/address_sanitizer.h"

namespace est::testing {

/// The directories FreshTempDir made, removed when the process that made them exits
/// normally (a crashed test leaves its files to look at; a forked child leaves them alone).
class TempDirsMade {
 public:
  ~TempDirsMade() {
    if (::getpid() != owner_) return;
    std::error_code ignored;
    for (const std::filesystem::path& dir : dirs_) std::filesystem::remove_all(dir, ignored);
  }
  void add(const std::filesystem::path& dir) {
    std::lock_guard<std::mutex> lock(mutex_);
    dirs_.push_back(dir);
  }

 private:
  const pid_t owner_ = ::getpid();
  std::mutex mutex_;
  std::vector<std::filesystem::path> dirs_;
};

/// The message of the `Error` that `body` throws ("" when it throws none; another exception
/// propagates).
template <typename Error>
std::string ErrorMessageOf(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

/// A fresh, empty directory under the system temp dir, unique to this process and name, and
/// removed when the process exits.
inline std::filesystem::path FreshTempDir(const std::string& name) {
  namespace fs = std::filesystem;
  static TempDirsMade made;
  fs::path dir = fs::temp_directory_path() / ("est_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  made.add(dir);
  return dir;
}

/// Number of entries directly inside `dir`.
inline int CountEntries(const std::filesystem::path& dir) {
  int n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

/// Matches an exception whose what() satisfies a string matcher, for
/// CHECK_THROWS_MATCHES(expr, Type, MessageMatches(Catch::Contains("a") && Catch::Contains("b"))).
template <typename StringMatcher>
class ExceptionMessageMatcher : public Catch::MatcherBase<std::exception> {
 public:
  explicit ExceptionMessageMatcher(StringMatcher matcher) : matcher_(std::move(matcher)) {}
  bool match(const std::exception& error) const override { return matcher_.match(std::string(error.what())); }
  std::string describe() const override { return "has a message that " + matcher_.toString(); }

 private:
  StringMatcher matcher_;
};

/// See ExceptionMessageMatcher.
template <typename StringMatcher>
ExceptionMessageMatcher<StringMatcher> MessageMatches(StringMatcher matcher) {
  return ExceptionMessageMatcher<StringMatcher>(std::move(matcher));
}

}  // namespace est::testing
