// Whether a failure to open something is blamed on the descriptor limit (ulimit -n).

#include "common/descriptor_limit.h"

#include <dirent.h>
#include <sys/resource.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <string>

using namespace est;

namespace {

// The descriptors this process holds now.
rlim_t OpenDescriptors() {
  DIR* dir = ::opendir("/proc/self/fd");
  REQUIRE(dir != nullptr);
  rlim_t open = 0;
  while (const dirent* entry = ::readdir(dir))
    if (entry->d_name[0] != '.') ++open;
  ::closedir(dir);
  return open - 1;  // the directory's own
}

}  // namespace

TEST_CASE("DescriptorsExhausted blames the limit only when descriptors run out or EMFILE is reported",
          "[common]") {
  rlimit limit{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &limit) == 0);
  if (limit.rlim_cur == RLIM_INFINITY) {
    CHECK_FALSE(DescriptorsExhausted(std::strerror(EMFILE)).has_value());
    return;
  }
  REQUIRE(OpenDescriptors() + 16 < limit.rlim_cur);
  CHECK_FALSE(DescriptorsExhausted().has_value());
  CHECK_FALSE(DescriptorsExhausted("connect: Connection refused").has_value());
  // A failure whose descriptors were closed again before it was caught still names the limit.
  const std::string ulimit = "(ulimit -n " + std::to_string(limit.rlim_cur) + ")";
  const auto reported = DescriptorsExhausted(std::string("[pair.cc:778] accept: ") + std::strerror(EMFILE));
  REQUIRE(reported.has_value());
  CHECK(reported->find(ulimit) != std::string::npos);
  CHECK(reported->find(" file descriptors its limit allows ") != std::string::npos);
  CHECK(DescribeOpenError(ENOENT) == std::strerror(ENOENT));
  CHECK(DescribeOpenError(EMFILE) == std::string(std::strerror(EMFILE)) + ": this process has no file descriptor "
                                      "left: " + *reported + "; raise the limit (e.g. ulimit -n 65536)");
}

TEST_CASE("DescriptorsExhausted names the limit when fewer than a handful are left", "[common]") {
  rlimit limit{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &limit) == 0);
  const rlim_t open = OpenDescriptors();
  rlimit tight = limit;
  tight.rlim_cur = open + 2;
  REQUIRE(tight.rlim_cur <= limit.rlim_cur);  // lowering the soft limit needs no privilege
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &tight) == 0);
  const auto exhausted = DescriptorsExhausted();
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &limit) == 0);
  REQUIRE(exhausted.has_value());
  CHECK(*exhausted == "it holds " + std::to_string(open) + " of the " + std::to_string(open + 2) +
                          " file descriptors its limit allows (ulimit -n " + std::to_string(open + 2) + ")");
}
