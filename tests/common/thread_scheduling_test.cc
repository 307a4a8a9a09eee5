// ScopedBatchScheduling: the policy threads inherit from the scope, and the creator's own.

#include "common/thread_scheduling.h"

#include <sched.h>

#include <catch2/catch.hpp>
#include <thread>

using namespace est;

namespace {

// The policy a thread started now gets.
int PolicyOfNewThread() {
  int policy = -1;
  std::thread([&] { policy = ::sched_getscheduler(0); }).join();
  return policy;
}

}  // namespace

TEST_CASE("ScopedBatchScheduling gives threads started in its scope SCHED_BATCH, and only those", "[common]") {
  int in_scope = -1, creator_in_scope = -1, creator_after = -1, after_scope = -1;
  bool applied = false;
  // On a thread of its own: the test runner's thread keeps its policy whatever happens.
  std::thread([&] {
    {
      const ScopedBatchScheduling scope;
      applied = scope.applied();
      creator_in_scope = ::sched_getscheduler(0);
      in_scope = PolicyOfNewThread();
    }
    creator_after = ::sched_getscheduler(0);
    after_scope = PolicyOfNewThread();
  }).join();
  CHECK(applied);
  CHECK(creator_in_scope == SCHED_BATCH);
  CHECK(in_scope == SCHED_BATCH);
  CHECK(creator_after == SCHED_OTHER);
  CHECK(after_scope == SCHED_OTHER);
}

TEST_CASE("ScopedBatchScheduling leaves a thread that is not under SCHED_OTHER as it is", "[common]") {
  int in_scope = -1, creator_after = -1;
  bool applied = true, idle = false;
  std::thread([&] {
    const sched_param param{};
    idle = ::sched_setscheduler(0, SCHED_IDLE, &param) == 0;
    {
      const ScopedBatchScheduling scope;
      applied = scope.applied();
      in_scope = PolicyOfNewThread();
    }
    creator_after = ::sched_getscheduler(0);
  }).join();
  REQUIRE(idle);
  CHECK_FALSE(applied);
  CHECK(in_scope == SCHED_IDLE);
  CHECK(creator_after == SCHED_IDLE);
}

TEST_CASE("ScopedBatchScheduling(false) changes nothing", "[common]") {
  int in_scope = -1;
  bool applied = true;
  std::thread([&] {
    const ScopedBatchScheduling scope(false);
    applied = scope.applied();
    in_scope = PolicyOfNewThread();
  }).join();
  CHECK_FALSE(applied);
  CHECK(in_scope == SCHED_OTHER);
}

TEST_CASE("AllowedCpus counts the CPUs of the calling thread's affinity", "[common]") {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  REQUIRE(::sched_getaffinity(0, sizeof(allowed), &allowed) == 0);
  CHECK(AllowedCpus() == CPU_COUNT(&allowed));
  int first = 0;
  while (!CPU_ISSET(first, &allowed)) ++first;
  int bound = -1;
  std::thread([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    if (::sched_setaffinity(0, sizeof(one), &one) == 0) bound = AllowedCpus();
  }).join();
  CHECK(bound == 1);
  CHECK(AllowedCpus() == CPU_COUNT(&allowed));  // the caller's own affinity is unchanged
}
