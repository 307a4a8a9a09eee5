// The directory of a gate's Unix socket: private, and those a killed gate left behind are
// removed, while a live gate's, a recent one and anything else are kept.

#include "net/gate_socket_directory.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <cstring>
#include <fstream>
#include <string>

#include "tests/test_util.h"

using namespace est::net;
namespace fs = std::filesystem;

namespace {

// A Unix socket bound at `path`; listening when `listen` is set. Its descriptor.
int BoundSocket(const fs::path& path, bool listen) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0);
  if (listen) REQUIRE(::listen(fd, 4) == 0);
  return fd;
}

// Sets `path`'s modification time `seconds` into the past.
void Age(const fs::path& path, int seconds) {
  timespec times[2];
  times[0].tv_sec = times[1].tv_sec = ::time(nullptr) - seconds;
  times[0].tv_nsec = times[1].tv_nsec = 0;
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW) == 0);
}

}  // namespace

TEST_CASE("a gate's socket directory is private, and only abandoned ones are removed", "[distribute]") {
  const fs::path base = est::testing::FreshTempDir("gate_dirs");
  // Killed gates': a socket nobody listens on, and (killed before the socket) an empty one.
  const fs::path killed = base / "est-gate-killed";
  fs::create_directory(killed);
  ::close(BoundSocket(killed / "grpc.sock", /*listen=*/false));
  Age(killed, 120);
  const fs::path killed_early = base / "est-gate-early0";
  fs::create_directory(killed_early);
  Age(killed_early, 120);
  // A live gate's, as old.
  const fs::path live = base / "est-gate-live00";
  fs::create_directory(live);
  const int listening = BoundSocket(live / "grpc.sock", /*listen=*/true);
  Age(live, 120);
  // A gate's that may still be starting.
  const fs::path recent = base / "est-gate-recent";
  fs::create_directory(recent);
  ::close(BoundSocket(recent / "grpc.sock", /*listen=*/false));
  // Old, but holding a file that no gate makes; and a name no gate makes.
  const fs::path with_file = base / "est-gate-file00";
  fs::create_directory(with_file);
  std::ofstream(with_file / "notes.txt") << "mine";
  Age(with_file, 120);
  const fs::path other_name = base / "my-est-gate-old";
  fs::create_directory(other_name);
  Age(other_name, 120);

  const fs::path made = MakeGateSocketDirectory(base.string());
  ::close(listening);

  CHECK(made.parent_path() == base);
  CHECK(made.filename().string().rfind("est-gate-", 0) == 0);
  struct stat info {};
  REQUIRE(::stat(made.c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0700);
  CHECK_FALSE(fs::exists(killed));
  CHECK_FALSE(fs::exists(killed_early));
  CHECK(fs::exists(live / "grpc.sock"));
  CHECK(fs::exists(recent / "grpc.sock"));
  CHECK(fs::exists(with_file / "notes.txt"));
  CHECK(fs::exists(other_name));
}

TEST_CASE("a gate's socket directory that cannot be made names the place and the fix", "[distribute]") {
  CHECK_THROWS_WITH(MakeGateSocketDirectory("/nonexistent-est-base"),
                    Catch::Contains("/nonexistent-est-base") && Catch::Contains("set TMPDIR"));
}
