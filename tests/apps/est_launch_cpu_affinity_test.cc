// ScopedThreadAffinity: the calling thread runs on the given CPUs inside the scope and on
// its previous CPUs after it, also when the scope is left by an exception.

#include "apps/est_launch/cpu_affinity.h"

#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>

#include "common/error.h"

using est_launch::AvailableCpus;
using est_launch::ScopedThreadAffinity;

TEST_CASE("ScopedThreadAffinity binds the calling thread and restores its CPUs", "[launch]") {
  const std::vector<int> all = AvailableCpus();
  REQUIRE(!all.empty());
  SECTION("bound inside the scope, restored after it, also after an exception") {
    {
      const ScopedThreadAffinity affinity({all.back()});
      CHECK(AvailableCpus() == std::vector<int>{all.back()});
    }
    CHECK(AvailableCpus() == all);
    try {
      const ScopedThreadAffinity affinity({all.front()});
      throw std::runtime_error("spawn failed");
    } catch (const std::runtime_error&) {
    }
    CHECK(AvailableCpus() == all);
  }
  SECTION("no CPUs: nothing changes") {
    const ScopedThreadAffinity affinity({});
    CHECK(AvailableCpus() == all);
  }
  SECTION("a CPU that does not exist: an error naming it, the thread unchanged") {
    try {
      const ScopedThreadAffinity affinity({100000});
      FAIL("no error");
    } catch (const est::Error& e) {
      CHECK(std::string(e.what()) == "cannot bind to CPUs 100000: Invalid argument");
    }
    CHECK(AvailableCpus() == all);
  }
}
