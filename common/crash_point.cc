#include "common/crash_point.h"

#include <dirent.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <string>

namespace est {
namespace {

// "<dir>/<task>@", or empty when no crash points are asked for. Read once.
const std::string& TokenPrefix() {
  static const std::string prefix = [] {
    const char* dir = std::getenv("EST_CRASH_POINTS_DIR");
    if (dir == nullptr || *dir == '\0') return std::string();
    const char* task = std::getenv("EST_TASK");
    return std::string(dir) + "/" + (task != nullptr && *task != '\0' ? task : "local") + "@";
  }();
  return prefix;
}

// The "<point>@<n>+" file of `prefix` whose n is at most `step`, or empty: the directory is
// read on each pass (tests only; a handful of files).
std::string FromStepToken(const std::string& prefix, std::string_view point, int64_t step) {
  const size_t slash = prefix.rfind('/');
  const std::string dir = prefix.substr(0, slash);
  const std::string name_prefix = prefix.substr(slash + 1) + std::string(point) + "@";
  DIR* stream = ::opendir(dir.c_str());
  if (stream == nullptr) return {};
  std::string found;
  while (const dirent* entry = ::readdir(stream)) {
    const std::string_view name(entry->d_name);
    if (name.size() <= name_prefix.size() + 1 || name.substr(0, name_prefix.size()) != name_prefix ||
        name.back() != '+')
      continue;
    const std::string digits(name.substr(name_prefix.size(), name.size() - name_prefix.size() - 1));
    char* end = nullptr;
    const long long from = std::strtoll(digits.c_str(), &end, 10);
    if (!digits.empty() && *end == '\0' && from <= step) {
      found = dir + "/" + std::string(name);
      break;
    }
  }
  ::closedir(stream);
  return found;
}

}  // namespace

void CrashPoint(std::string_view point, int64_t step) {
  const std::string& prefix = TokenPrefix();
  if (prefix.empty()) return;
  const std::string token = prefix + std::string(point) + "@" + std::to_string(step);
  if (::unlink(token.c_str()) != 0) {  // not asked for at this step (or fired already)
    const std::string from = FromStepToken(prefix, point, step);
    if (from.empty() || ::unlink(from.c_str()) != 0) return;
  }
  ::kill(::getpid(), SIGKILL);
}

}  // namespace est
