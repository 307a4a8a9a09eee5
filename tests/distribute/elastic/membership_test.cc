// Membership: generations of the training group formed in one store by members that are
// threads; the coordinator (the chief) closes each.

#include "distribute/elastic/membership.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "distribute/elastic/beat_watch.h"
#include "distribute/elastic/member_heartbeat.h"
#include "distribute/rendezvous/store.h"
#include "tests/distribute/rank_threads.h"
#include "tests/log_capture.h"
#include "tests/test_util.h"

namespace membership_test {
namespace {

using est::distribute::BeatWatch;
using est::distribute::Generation;
using est::distribute::Membership;
using est::distribute::MembershipOptions;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

MembershipOptions Options(const std::string& member, bool coordinator = false) {
  MembershipOptions options;
  options.member = member;
  options.coordinator = coordinator;
  options.settle = 10s;
  options.timeout = 20s;
  return options;
}

// The members `ids` of a first generation in `store`, each on a thread, `ids[0]` the
// coordinator; the others arrive in any order. Each member's view, in the order of `ids`.
std::vector<Generation> FormFirst(const std::shared_ptr<est::distribute::Store>& store,
                                  const std::vector<std::string>& ids) {
  return est::testing::RunRanks<Generation>(static_cast<int>(ids.size()), [&](int index) {
    Membership membership(store, Options(ids[static_cast<size_t>(index)], index == 0));
    return membership.JoinFirst(static_cast<int>(ids.size()));
  });
}

double SecondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

TEST_CASE("The first generation holds every member, the chief first, in one order for all", "[distribute]") {
  const auto store = est::distribute::CreateInMemoryStore();
  const std::vector<std::string> ids{"chief", "a", "b"};
  const std::vector<Generation> first = FormFirst(store, ids);
  const std::vector<std::string> members = first[0].members;
  CHECK(members.front() == "chief");
  CHECK(std::is_permutation(members.begin(), members.end(), ids.begin(), ids.end()));
  for (size_t index = 0; index < first.size(); ++index) {
    CHECK(first[index].number == 1);
    CHECK(first[index].members == members);
    CHECK(members[static_cast<size_t>(first[index].rank)] == ids[index]);
  }
}

TEST_CASE("A first generation joined at rendezvous ranks keeps them, whatever the order of arrival", "[distribute]") {
  const auto store = est::distribute::CreateInMemoryStore();
  const std::vector<std::string> ids{"chief", "a", "b", "c"};
  const std::vector<Generation> first = est::testing::RunRanks<Generation>(4, [&](int rank) {
    // The last rank arrives first, the chief last.
    std::this_thread::sleep_for(std::chrono::milliseconds(30 * (4 - rank)));
    return Membership(store, Options(ids[static_cast<size_t>(rank)], rank == 0)).JoinFirstAt(rank, 4);
  });
  for (int rank = 0; rank < 4; ++rank) {
    CHECK(first[static_cast<size_t>(rank)].number == 1);
    CHECK(first[static_cast<size_t>(rank)].rank == rank);
    CHECK(first[static_cast<size_t>(rank)].members == ids);
  }
  // After it, the next generation forms from it as from any other: rank 2 lost.
  const std::vector<Generation> second = est::testing::RunRanks<Generation>(3, [&](int index) {
    Generation mine = first[0];
    mine.rank = index < 2 ? index : 3;
    return Membership(store, Options(ids[static_cast<size_t>(mine.rank)], index == 0)).Rejoin(mine, {2});
  });
  CHECK(second[2].members == std::vector<std::string>{"chief", "a", "c"});
  CHECK(second[2].number == 2);
  CHECK(second[2].rank == 2);
  CHECK_THROWS_MATCHES(Membership(store, Options("d")).JoinFirstAt(0, 2), est::ConfigError,
                       est::testing::MessageMatches(Catch::Contains("rank 0 of 2 cannot join the first generation")));
}

TEST_CASE("After a member is lost, the others form the next generation at once, in their old order", "[distribute]") {
  const auto store = est::distribute::CreateInMemoryStore();
  const Generation first = FormFirst(store, {"chief", "a", "b"})[0];
  const auto start = Clock::now();
  // Rank 1 is lost: the chief and rank 2 go on, the chief first, as before.
  const std::vector<Generation> second = est::testing::RunRanks<Generation>(2, [&](int index) {
    Generation mine = first;
    mine.rank = index == 0 ? 0 : 2;
    Membership membership(store, Options(first.members[static_cast<size_t>(mine.rank)], index == 0));
    return membership.Rejoin(mine, /*lost_ranks=*/{1});
  });
  CHECK(SecondsSince(start) < 2);  // no settle: every member expected arrived
  for (const Generation& generation : second) {
    CHECK(generation.number == 2);
    CHECK(generation.members == std::vector<std::string>{"chief", first.members[2]});
  }
  CHECK(second[0].rank == 0);
  CHECK(second[1].rank == 1);
}

TEST_CASE("A member lost without being named is left out after the settle time", "[distribute]") {
  const auto store = est::distribute::CreateInMemoryStore();
  const Generation first = FormFirst(store, {"chief", "a", "b"})[0];
  const auto start = Clock::now();
  // Rank 2 is lost, and nobody names it.
  const std::vector<Generation> second = est::testing::RunRanks<Generation>(2, [&](int index) {
    Generation mine = first;
    mine.rank = index;
    MembershipOptions options = Options(first.members[static_cast<size_t>(index)], index == 0);
    options.settle = 300ms;
    return Membership(store, options).Rejoin(mine, /*lost_ranks=*/{});
  });
  const double seconds = SecondsSince(start);
  CHECK(seconds >= 0.3);
  CHECK(seconds < 3);
  CHECK(second[0].members == std::vector<std::string>{"chief", first.members[1]});
  CHECK(second[1].rank == 1);
}

TEST_CASE("A member that comes back after the group went on without it joins a later generation as a newcomer",
          "[distribute]") {
  const auto store = est::distribute::CreateInMemoryStore();
  const Generation first = FormFirst(store, {"chief", "a", "b"})[0];
  // The first generation's order past the chief is the order of arrival.
  const std::string& one = first.members[1];
  const std::string& two = first.members[2];
  est::testing::LogCapture log;
  // Rank 2 is stopped while the others re-form: generation 2 closes without it after the
  // settle time. It then comes back to re-form generation 1's group, finds generation 2 closed
  // without it, and waits as a newcomer; the chief sees it between two steps and forms
  // generation 3 with it.
  const std::vector<Generation> third = est::testing::RunRanks<Generation>(3, [&](int index) {
    Generation mine = first;
    mine.rank = index;
    MembershipOptions options = Options(first.members[static_cast<size_t>(index)], index == 0);
    options.settle = 300ms;
    Membership membership(store, options);
    if (index == 2) {
      while (!store->check({"membership/2/members"})) std::this_thread::sleep_for(10ms);
      return membership.Rejoin(mine, /*lost_ranks=*/{});
    }
    const Generation second = membership.Rejoin(mine, /*lost_ranks=*/{});
    CHECK(second.members == std::vector<std::string>{"chief", one});
    CHECK_FALSE(second.newcomer);
    const auto deadline = Clock::now() + 10s;
    while (!membership.NewcomerWaiting(second) && Clock::now() < deadline) std::this_thread::sleep_for(10ms);
    return membership.Rejoin(second, /*lost_ranks=*/{});
  });
  for (const Generation& generation : third) {
    CHECK(generation.number == 3);
    CHECK(generation.members == std::vector<std::string>{"chief", one, two});
  }
  CHECK_FALSE(third[0].newcomer);
  CHECK_FALSE(third[1].newcomer);
  CHECK(third[2].newcomer);
  const std::string text = log.text();
  CHECK(text.find("warning: Generation 2 of the training group closes without '" + two +
                  "' of generation 1, which did not come within") != std::string::npos);
  CHECK(text.find("warning: Member '" + two +
                  "' of generation 1 came back after generation 2 closed without it: it joined generation 3 as a "
                  "newcomer") != std::string::npos);
}

TEST_CASE("A member found lost while the coordinator waits is left out then, not after the settle time",
          "[distribute]") {
  const auto store = est::distribute::CreateInMemoryStore();
  const Generation first = FormFirst(store, {"chief", "a", "b", "c"})[0];
  const auto start = Clock::now();
  // Rank 1 is named lost; rank 3 dies too, which the chief's watch learns 300 ms later.
  const std::vector<Generation> second = est::testing::RunRanks<Generation>(2, [&](int index) {
    Generation mine = first;
    mine.rank = index == 0 ? 0 : 2;
    MembershipOptions options = Options(first.members[static_cast<size_t>(mine.rank)], index == 0);
    options.settle = 30s;
    const auto lost_later = [start] {
      return Clock::now() - start < 300ms ? std::vector<int>{1} : std::vector<int>{1, 3};
    };
    return Membership(store, options).Rejoin(mine, /*lost_ranks=*/{1}, lost_later);
  });
  const double seconds = SecondsSince(start);
  CHECK(seconds >= 0.3);
  CHECK(seconds < 5);
  for (const Generation& generation : second)
    CHECK(generation.members == std::vector<std::string>{"chief", first.members[2]});
}

TEST_CASE("A member that stops beating is left out after the beat lease; one that beats is waited for",
          "[distribute]") {
  const auto store = est::distribute::CreateInMemoryStore();
  const Generation first = FormFirst(store, {"chief", "a", "b", "c"})[0];
  est::testing::LogCapture log;
  // Nobody is named lost. "a" beats and comes after 1 s; "b" beat once and is gone; "c" never
  // beat. The chief waits for "a", beyond the lease, and for neither of the others the 30 s of
  // its settle time.
  Membership(store, Options("b")).Beat();
  const auto start = Clock::now();
  const std::vector<Generation> second = est::testing::RunRanks<Generation>(2, [&](int index) {
    const std::string id = index == 0 ? "chief" : "a";
    Generation mine = first;
    mine.rank = static_cast<int>(std::find(first.members.begin(), first.members.end(), id) - first.members.begin());
    MembershipOptions options = Options(id, index == 0);
    options.settle = 30s;
    options.timeout = 40s;
    options.beat_lease = 400ms;
    Membership membership(store, options);
    const est::distribute::MemberHeartbeat heartbeat([&membership] { membership.Beat(); }, 50ms);
    if (index == 1) std::this_thread::sleep_for(1s);
    return membership.Rejoin(mine, /*lost_ranks=*/{});
  });
  const double seconds = SecondsSince(start);
  CHECK(seconds >= 1);
  CHECK(seconds < 5);
  for (const Generation& generation : second) CHECK(generation.members == std::vector<std::string>{"chief", "a"});
  for (const std::string member : {"b", "c"})
    CHECK(log.text().find("warning: Generation 2 of the training group forms without '" + member +
                          "' of generation 1, which has not beaten for ") != std::string::npos);
}

TEST_CASE("The beat watch names the members whose beats have not changed for the lease, on its own clock",
          "[distribute]") {
  const auto store = est::distribute::CreateInMemoryStore();
  BeatWatch watch(store, 300ms, /*beat_interval=*/100ms);
  Membership a(store, Options("a"));
  a.Beat();
  // A member read for the first time gets a whole lease, whether it beat before or never did.
  CHECK(watch.Read({"a", "b"}).empty());
  std::this_thread::sleep_for(200ms);
  a.Beat();
  std::this_thread::sleep_for(200ms);
  const std::vector<BeatWatch::Silent> silent = watch.Read({"a", "b"});
  REQUIRE(silent.size() == 1);
  CHECK(silent[0].member == "b");
  CHECK(silent[0].silent_for >= 300ms);
  std::this_thread::sleep_for(350ms);
  CHECK(watch.Read({"a", "b"}).size() == 2);
}

// Reads `watch` every 20 ms, beating the members of `beating` before each read and those of
// `stopping` until `stop_after`, until it names a member; gives what it named.
std::vector<BeatWatch::Silent> FirstNamed(BeatWatch& watch, const std::shared_ptr<est::distribute::Store>& store,
                                          const std::vector<std::string>& beating,
                                          const std::vector<std::string>& stopping, Clock::duration stop_after) {
  const auto start = Clock::now();
  std::vector<Membership> beaters;
  for (const std::string& member : beating) beaters.emplace_back(store, Options(member));
  std::vector<Membership> stoppers;
  for (const std::string& member : stopping) stoppers.emplace_back(store, Options(member));
  std::vector<std::string> all{"a"};
  all.insert(all.end(), beating.begin(), beating.end());
  all.insert(all.end(), stopping.begin(), stopping.end());
  while (Clock::now() - start < 20s) {
    for (Membership& member : beaters) member.Beat();
    if (Clock::now() - start < stop_after)
      for (Membership& member : stoppers) member.Beat();
    std::vector<BeatWatch::Silent> named = watch.Read(all);
    if (!named.empty()) return named;
    std::this_thread::sleep_for(20ms);
  }
  FAIL("the watch named no member in 20 s");
  return {};
}

TEST_CASE("The beat watch names members that fall silent a beat apart together, each after the lease",
          "[distribute]") {
  const auto store = est::distribute::CreateInMemoryStore();
  // "a" never beats; "b" stops 250 ms after it, as a host's second worker whose last beat came
  // later than the first's; "c" beats on. "a" passes the lease first, but "b" has missed two
  // beats by then: both are named at the read where "b" passes the lease too, "c" never.
  BeatWatch watch(store, 600ms, /*beat_interval=*/100ms);
  const std::vector<BeatWatch::Silent> named = FirstNamed(watch, store, {"c"}, {"b"}, 250ms);
  REQUIRE(named.size() == 2);
  CHECK(named[0].member == "a");
  CHECK(named[1].member == "b");
  for (const BeatWatch::Silent& silent : named) CHECK(silent.silent_for >= 600ms);
  CHECK(named[0].silent_for >= named[1].silent_for + 150ms);
}

TEST_CASE("The beat watch names a member silent for the lease at once while the others beat", "[distribute]") {
  const auto store = est::distribute::CreateInMemoryStore();
  BeatWatch watch(store, 600ms, /*beat_interval=*/100ms);
  const std::vector<BeatWatch::Silent> named = FirstNamed(watch, store, {"b", "c"}, {}, 0ms);
  REQUIRE(named.size() == 1);
  CHECK(named[0].member == "a");
  CHECK(named[0].silent_for >= 600ms);
}

TEST_CASE("Members read the ranks the coordinator cut off their generation, and no other generation's",
          "[distribute]") {
  const auto store = est::distribute::CreateInMemoryStore();
  const std::vector<Generation> first = FormFirst(store, {"chief", "a", "b", "c"});
  Membership chief(store, Options("chief", true));
  Membership member(store, Options(first[1].members[1]));
  CHECK(member.CutOffRanks(first[1]).empty());
  chief.CutOff(first[0], {1, 3});
  CHECK(member.CutOffRanks(first[1]) == std::vector<int>{1, 3});
  Generation later = first[1];
  later.number = 2;
  CHECK(member.CutOffRanks(later).empty());
  CHECK_THROWS_MATCHES(member.CutOff(first[1], {2}), est::Error,
                       est::testing::MessageMatches(Catch::Contains("only the coordinator cuts members off")));
  store->set("membership/2/cut_off", "1,x");
  CHECK_THROWS_MATCHES(member.CutOffRanks(later), est::Error,
                       est::testing::MessageMatches(Catch::Contains(
                           "the training group's store names 'x' cut off generation 2, which has ranks 1 to 3")));
}

TEST_CASE("A replacement that arrives within replacement_wait takes the lost member's place at the end",
          "[distribute]") {
  const auto store = est::distribute::CreateInMemoryStore();
  const Generation first = FormFirst(store, {"chief", "a", "b"})[0];
  const auto start = Clock::now();
  const std::vector<Generation> second = est::testing::RunRanks<Generation>(3, [&](int index) {
    if (index == 2) {  // the replacement of rank 1, started a little later
      std::this_thread::sleep_for(200ms);
      return *Membership(store, Options("restarted")).JoinAsNewcomer();
    }
    Generation mine = first;
    mine.rank = index == 0 ? 0 : 2;
    MembershipOptions options = Options(first.members[static_cast<size_t>(mine.rank)], index == 0);
    options.replacement_wait = 10s;
    return Membership(store, options).Rejoin(mine, /*lost_ranks=*/{1});
  });
  CHECK(SecondsSince(start) < 5);  // closed when the replacement came, not at the end of the wait
  for (const Generation& generation : second) {
    CHECK(generation.number == 2);
    CHECK(generation.members == std::vector<std::string>{"chief", first.members[2], "restarted"});
  }
  CHECK(second[2].rank == 2);
}

TEST_CASE("A newcomer waits until the chief ends the generation, then joins the next", "[distribute]") {
  const auto store = est::distribute::CreateInMemoryStore();
  const std::vector<Generation> first = FormFirst(store, {"chief", "a"});
  CHECK_FALSE(Membership(store, Options("chief", true)).NewcomerWaiting(first[0]));
  const std::vector<Generation> second = est::testing::RunRanks<Generation>(3, [&](int index) {
    if (index == 2) return *Membership(store, Options("new")).JoinAsNewcomer();
    Membership membership(store, Options(index == 0 ? "chief" : "a", index == 0));
    // The members train on until the chief sees the newcomer between two steps; then the chief
    // (and, through the step's flags, every member) ends the generation.
    const auto deadline = Clock::now() + 10s;
    while (!membership.NewcomerWaiting(first[static_cast<size_t>(index)]) && Clock::now() < deadline)
      std::this_thread::sleep_for(10ms);
    return membership.Rejoin(first[static_cast<size_t>(index)], /*lost_ranks=*/{});
  });
  for (const Generation& generation : second) {
    CHECK(generation.number == 2);
    CHECK(generation.members == std::vector<std::string>{"chief", "a", "new"});
  }
  CHECK_FALSE(second[1].newcomer);
  CHECK(second[2].newcomer);
}

TEST_CASE("A group of max_members takes no newcomer: the chief does not end its generation for one", "[distribute]") {
  const auto store = est::distribute::CreateInMemoryStore();
  const std::vector<Generation> first = FormFirst(store, {"chief", "a"});
  MembershipOptions newcomer = Options("new");
  newcomer.max_members = 2;
  newcomer.settle = 0ms;
  newcomer.timeout = 1s;
  std::string error;
  std::thread waiting([&] {
    try {
      Membership(store, newcomer).JoinAsNewcomer();
    } catch (const est::TimeoutError& e) {
      error = e.what();
    }
  });
  while (!store->check({"membership/2/arrival/1"})) std::this_thread::sleep_for(10ms);
  MembershipOptions chief = Options("chief", true);
  chief.max_members = 2;
  CHECK_FALSE(Membership(store, chief).NewcomerWaiting(first[0]));
  chief.max_members = 3;
  CHECK(Membership(store, chief).NewcomerWaiting(first[0]));
  waiting.join();
  CHECK_THAT(error, Catch::Contains("member 'new' waited 1 s for generation 2 of the training group to form") &&
                        Catch::Contains("a newcomer waiting while the group holds fewer than its most, 2 members"));
}

TEST_CASE("Newcomers learn that the training ended: one waiting, and one arriving after", "[distribute]") {
  const auto store = est::distribute::CreateInMemoryStore();
  const std::vector<Generation> first = FormFirst(store, {"chief", "a"});
  const auto start = Clock::now();
  const std::vector<int> joined = est::testing::RunRanks<int>(2, [&](int index) {
    if (index == 1) return static_cast<int>(Membership(store, Options("waiting")).JoinAsNewcomer().has_value());
    Membership chief(store, Options("chief", true));
    while (!chief.NewcomerWaiting(first[0])) std::this_thread::sleep_for(10ms);
    chief.Finish(first[0]);  // the training ended before the chief let the newcomer in
    return 1;
  });
  CHECK(SecondsSince(start) < 5);
  CHECK(joined[1] == 0);
  CHECK_FALSE(Membership(store, Options("late")).JoinAsNewcomer().has_value());
}

TEST_CASE("Members beyond max_members wait for a later generation; too few fail after the timeout", "[distribute]") {
  SECTION("beyond max_members") {
    const auto store = est::distribute::CreateInMemoryStore();
    const std::vector<std::string> ids{"chief", "y", "z"};
    const auto errors = est::testing::RunRanksCatching(3, [&](int index) {
      MembershipOptions options = Options(ids[static_cast<size_t>(index)], index == 0);
      options.max_members = 2;
      // A member waits the coordinator's settle time and its own timeout.
      options.settle = 500ms;
      if (index > 0) options.timeout = 1500ms;
      const Generation generation = Membership(store, options).JoinFirst(2);
      if (generation.world_size() != 2 || generation.members[0] != "chief") throw std::logic_error("wrong members");
    });
    CHECK(est::testing::MessageOf(errors[0]).empty());
    // The first of the other two to arrive is in; the second waits for generation 2, which
    // never forms here.
    const std::string y = est::testing::MessageOf(errors[1]);
    const std::string z = est::testing::MessageOf(errors[2]);
    CHECK(y.empty() != z.empty());
    CHECK_THAT(y + z, Catch::Contains("' waited 2 s for generation 2 of the training group to form"));
  }
  SECTION("fewer than min_members") {
    const auto store = est::distribute::CreateInMemoryStore();
    MembershipOptions options = Options("chief", true);
    options.min_members = 2;
    options.timeout = 300ms;
    CHECK_THROWS_MATCHES(Membership(store, options).JoinFirst(3), est::TimeoutError,
                         est::testing::MessageMatches(Catch::Contains(
                             "generation 1 of the training group has 1 member(s) after 300 ms, fewer than the 2 it "
                             "needs (min_members)")));
  }
}

TEST_CASE("Membership refuses ids and bounds that cannot work", "[distribute]") {
  const auto store = est::distribute::CreateInMemoryStore();
  CHECK_THROWS_MATCHES(Membership(store, Options("")), est::ConfigError,
                       est::testing::MessageMatches(Catch::Contains("a member id must be 1 to 256 characters")));
  CHECK_THROWS_AS(Membership(store, Options("a\nb")), est::ConfigError);
  MembershipOptions bounds = Options("a");
  bounds.min_members = 3;
  bounds.max_members = 2;
  CHECK_THROWS_MATCHES(Membership(store, bounds), est::ConfigError,
                       est::testing::MessageMatches(Catch::Contains("min_members (3) must be at least 1 and at most "
                                                                    "max_members (2)")));
}

}  // namespace
}  // namespace membership_test
