#include "distribute/collective/gloo/gloo_connection_cut.h"

#include <dirent.h>
#include <fcntl.h>
#include <gloo/transport/tcp/address.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>

// Gloo closes a pair (Pair::close) without failing the operations that wait on it: they wait
// for Gloo's timeout. A shutdown(2) of its socket instead makes the socket read as closed by
// the peer, which Gloo's event loop turns into the error of every waiting operation and the
// pair's move to CLOSED. Gloo keeps the socket to itself, so it is found among this
// process's descriptors by its two addresses. Each candidate is duplicated before its
// addresses are read, and shut down through the duplicate: a descriptor that another thread
// closes and reuses meanwhile is never the one shut down.

namespace est::distribute::detail {
namespace {

// The address of `fd`'s end (getsockname) or of its peer's, as Gloo writes it.
std::optional<std::string> AddressOf(int fd, bool peer) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  auto* raw = reinterpret_cast<sockaddr*>(&address);
  const int rv = peer ? ::getpeername(fd, raw, &length) : ::getsockname(fd, raw, &length);
  if (rv != 0 || (address.ss_family != AF_INET && address.ss_family != AF_INET6)) return std::nullopt;
  return gloo::transport::tcp::Address(raw, length).str();
}

bool IsSocket(int fd) {
  struct stat status {};
  return ::fstat(fd, &status) == 0 && S_ISSOCK(status.st_mode);
}

}  // namespace

bool CutTcpConnection(const std::string& local, const std::string& peer) {
  DIR* directory = ::opendir("/proc/self/fd");
  if (directory == nullptr) return false;
  bool cut = false;
  while (!cut) {
    const dirent* entry = ::readdir(directory);
    if (entry == nullptr) break;
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == ::dirfd(directory) || !IsSocket(static_cast<int>(fd))) continue;
    const int copy = ::fcntl(static_cast<int>(fd), F_DUPFD_CLOEXEC, 0);
    if (copy < 0) continue;
    const std::optional<std::string> other = AddressOf(copy, true);
    if (AddressOf(copy, false) == local && other && (peer.empty() || *other == peer))
      cut = ::shutdown(copy, SHUT_RDWR) == 0;
    ::close(copy);
  }
  ::closedir(directory);
  return cut;
}

}  // namespace est::distribute::detail
