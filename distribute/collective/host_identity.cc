#include "distribute/collective/host_identity.h"

#include <unistd.h>

#include <fstream>

namespace est::distribute::detail {
namespace {

std::string ReadFirstLine(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  std::getline(file, line);
  return line;
}

std::string NamespaceOf(const char* name) {
  char target[256];
  const ssize_t length = ::readlink((std::string("/proc/self/ns/") + name).c_str(), target, sizeof(target) - 1);
  return length > 0 ? std::string(target, static_cast<size_t>(length)) : std::string("?");
}

}  // namespace

std::string HostIdentity() {
  return ReadFirstLine("/proc/sys/kernel/random/boot_id") + "|" + NamespaceOf("ipc") + "|" + NamespaceOf("pid") +
         "|" + NamespaceOf("mnt");
}

}  // namespace est::distribute::detail
