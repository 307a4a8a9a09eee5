#include "estimator/model_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>

#include "common/error.h"
#include "common/logging.h"

namespace est {
namespace {

std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  ::gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S UTC", &utc);
  return text;
}

// The owner line the lock file holds: "job 'j' (host h, pid 42, since 2026-11-24 12:00:00 UTC)".
std::string OwnerLine() {
  const char* job = std::getenv("EST_JOB_ID");
  return std::string(job != nullptr && *job != '\0' ? "job '" + std::string(job) + "'" : "a process outside est-launch") +
         " (host " + HostName() + ", pid " + std::to_string(::getpid()) + ", since " + UtcNow() + ")";
}

std::string ReadOwner(int fd) {
  char buffer[1024];
  const ssize_t n = ::pread(fd, buffer, sizeof(buffer) - 1, 0);
  if (n <= 0) return "a process that has not yet written its name (it is starting)";
  std::string owner(buffer, static_cast<size_t>(n));
  while (!owner.empty() && (owner.back() == '\n' || owner.back() == '\0')) owner.pop_back();
  return owner;
}

}  // namespace

ModelDirLock::ModelDirLock(const std::string& model_dir) {
  const std::string path = (std::filesystem::path(model_dir) / kModelDirLockName).string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  EST_CHECK(fd_ >= 0, IoError, "cannot open the lock file '", path, "' of model_dir: ", std::strerror(errno));
  int result;
  do {
    result = ::flock(fd_, LOCK_EX | LOCK_NB);
  } while (result != 0 && errno == EINTR);
  if (result != 0) {
    const int error = errno;
    if (error == EWOULDBLOCK) {
      const std::string owner = ReadOwner(fd_);
      ::close(fd_);
      fd_ = -1;
      EST_THROW(ConfigError, "model_dir ", model_dir, " is in use by ", owner,
                ": two jobs writing one model_dir would overwrite each other's checkpoints. Stop that job or "
                "train into another model_dir (the lock, an flock on ", path, ", goes when its owner exits)");
    }
    Log().warn("cannot lock model_dir {} ({} on {}): a second job writing into it would not be refused", model_dir,
               std::strerror(error), path);
    return;
  }
  held_ = true;
  const std::string line = OwnerLine() + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, line.data(), line.size(), 0) != static_cast<ssize_t>(line.size())) {
    Log().warn("cannot write the owner of model_dir {} into {}: {}", model_dir, path, std::strerror(errno));
  }
}

ModelDirLock::~ModelDirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

}  // namespace est
