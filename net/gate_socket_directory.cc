#include "net/gate_socket_directory.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "common/error.h"

namespace est::net {
namespace {

constexpr const char* kPrefix = "est-gate-";
constexpr const char* kSocketName = "grpc.sock";

/// True when connecting to the Unix socket at `path` is refused: nothing listens on it.
bool NobodyListens(const std::string& path) {
  sockaddr_un address{};
  if (path.size() >= sizeof(address.sun_path)) return false;
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool refused =
      ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0 && errno == ECONNREFUSED;
  ::close(fd);
  return refused;
}

/// True when `directory` is a gate's that was left behind: see MakeGateSocketDirectory.
bool Abandoned(const std::filesystem::path& directory, std::time_t unchanged_since) {
  struct stat info {};
  if (::lstat(directory.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != ::geteuid() ||
      info.st_mtime > unchanged_since)
    return false;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    const std::string path = entry.path().string();
    if (entry.path().filename() != kSocketName || ::lstat(path.c_str(), &info) != 0 || !S_ISSOCK(info.st_mode) ||
        !NobodyListens(path))
      return false;
  }
  return !error;
}

void RemoveAbandoned(const std::string& base, std::chrono::seconds abandoned_after) {
  const std::time_t unchanged_since = std::time(nullptr) - static_cast<std::time_t>(abandoned_after.count());
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(base, error)) {
    if (entry.path().filename().string().rfind(kPrefix, 0) != 0 || !Abandoned(entry.path(), unchanged_since)) continue;
    ::unlink((entry.path() / kSocketName).c_str());
    ::rmdir(entry.path().c_str());
  }
}

}  // namespace

std::string GateDirectoryBase() {
  const char* tmpdir = std::getenv("TMPDIR");
  return tmpdir != nullptr && *tmpdir != '\0' && std::strlen(tmpdir) < 64 ? tmpdir : "/tmp";
}

std::string MakeGateSocketDirectory(const std::string& base, std::chrono::seconds abandoned_after) {
  RemoveAbandoned(base, abandoned_after);
  std::string path = base + "/" + kPrefix + "XXXXXX";
  if (::mkdtemp(path.data()) == nullptr)
    EST_THROW(IoError, "cannot make a directory for the server's Unix socket under ", base, ": ", std::strerror(errno),
              " (set TMPDIR to a writable directory)");
  return path;
}

}  // namespace est::net
