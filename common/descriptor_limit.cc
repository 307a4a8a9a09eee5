#include "common/descriptor_limit.h"

#include <dirent.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace est {
namespace {

// Descriptors left below which a failure is blamed on the limit.
constexpr uint64_t kFewLeft = 4;

}  // namespace

std::optional<std::string> DescriptorsExhausted(std::string_view error) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return std::nullopt;
  const std::string allowed = std::to_string(limit.rlim_cur) + " file descriptors its limit allows (ulimit -n " +
                              std::to_string(limit.rlim_cur) + ")";
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) {
    if (errno == EMFILE || errno == ENFILE) return "it holds all of the " + allowed;
    return std::nullopt;
  }
  uint64_t open = 0;
  while (const dirent* entry = ::readdir(dir))
    if (entry->d_name[0] != '.') ++open;
  ::closedir(dir);
  if (open > 0) --open;  // the directory's own
  const bool reported = error.find(std::strerror(EMFILE)) != std::string_view::npos;
  if (!reported && open + kFewLeft < limit.rlim_cur) return std::nullopt;
  return "it holds " + std::to_string(open) + " of the " + allowed;
}

std::string NoDescriptorLeft(const std::string& exhausted) {
  return "this process has no file descriptor left: " + exhausted + "; raise the limit (e.g. ulimit -n 65536)";
}

std::string DescribeOpenError(int err) {
  std::string text = std::strerror(err);
  if (err != EMFILE) return text;
  if (const std::optional<std::string> exhausted = DescriptorsExhausted(text)) text += ": " + NoDescriptorLeft(*exhausted);
  return text;
}

}  // namespace est
