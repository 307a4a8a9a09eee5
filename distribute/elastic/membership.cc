#include "distribute/elastic/membership.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <utility>

#include "common/error.h"
#include "common/logging.h"
#include "distribute/elastic/beat_watch.h"
#include "distribute/rendezvous/error_text.h"
#include "distribute/rendezvous/store.h"

// Keys, in the store given to Membership:
//   membership/latest            the number of the latest closed generation
//   membership/<g>/arrived       counter: the members that arrived at generation g
//   membership/<g>/arrival/<i>   the id of the i-th arrival (from 1)
//   membership/1/rank/<r>        the id of rank r, for a first generation in the rendezvous' order
//   membership/beat/<member>     counter: the beats of a member (Beat; read by BeatWatch)
//   membership/<g>/cut_off       the ranks of generation g that the coordinator cut off
//                                (CutOff), comma-separated; set once
//   membership/<g>/members       the members of generation g in rank order, one a line: set
//                                once, by the coordinator, which closes g; empty where the
//                                training ended after generation g-1 (Finish)
//
// A member arrives by taking the next arrival number and writing its id under it; it then
// waits for the members' key. One that is not among them (it came after the close, or beyond
// max_members) goes on to the next generation, which forms when the coordinator ends the
// current one (a failure, or a newcomer waiting: NewcomerWaiting). The coordinator orders the
// members: itself first (the chief is rank 0), then the members of the last generation in their
// order, then the newcomers in the order they arrived.

namespace est::distribute {
namespace {

using Clock = std::chrono::steady_clock;

// How long the coordinator waits for the next arrival before it looks at the clock again.
constexpr std::chrono::milliseconds kArrivalSlice(50);
constexpr size_t kMaxMemberIdLength = 256;

std::string Key(int64_t number, const std::string& what) { return "membership/" + std::to_string(number) + "/" + what; }

std::string Joined(const std::vector<std::string>& members) {
  std::string text;
  for (const std::string& member : members) text += (text.empty() ? "" : "\n") + member;
  return text;
}

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> members;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    if (end > start) members.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return members;
}

bool Contains(const std::vector<std::string>& members, const std::string& member) {
  return std::find(members.begin(), members.end(), member) != members.end();
}

std::chrono::milliseconds Until(Clock::time_point deadline) {
  return std::max(std::chrono::milliseconds(1),
                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
}

}  // namespace

Membership::Membership(std::shared_ptr<Store> store, MembershipOptions options)
    : store_(std::move(store)), options_(std::move(options)) {
  EST_CHECK(store_ != nullptr, ConfigError, "Membership: the store is null");
  EST_CHECK(!options_.member.empty() && options_.member.size() <= kMaxMemberIdLength &&
                options_.member.find('\n') == std::string::npos,
            ConfigError, "Membership: a member id must be 1 to ", kMaxMemberIdLength,
            " characters without a newline, got '", options_.member, "'");
  EST_CHECK(options_.min_members >= 1 && options_.min_members <= options_.max_members, ConfigError,
            "Membership: min_members (", options_.min_members, ") must be at least 1 and at most max_members (",
            options_.max_members, ")");
  EST_CHECK(options_.timeout.count() > 0 && options_.settle.count() >= 0 && options_.replacement_wait.count() >= 0,
            ConfigError, "Membership: the timeout must be positive and settle and replacement_wait not negative");
  EST_CHECK(options_.beat_interval.count() > 0, ConfigError, "Membership: beat_interval must be positive, got ",
            options_.beat_interval.count(), " ms");
}

Generation Membership::JoinFirst(int expected) {
  EST_CHECK(expected >= 1, ConfigError, "Membership: the first generation expects at least 1 member, got ", expected);
  std::optional<Generation> first = Join(1, expected, {}, expected);
  EST_CHECK(first.has_value(), Error, "the store's training group ended before its first generation formed");
  return std::move(*first);
}

Generation Membership::JoinFirstAt(int rank, int world_size) {
  EST_CHECK(world_size >= 1 && rank >= 0 && rank < world_size && (rank == 0) == options_.coordinator, ConfigError,
            "Membership: rank ", rank, " of ", world_size, " cannot join the first generation",
            options_.coordinator ? " as its coordinator, which is rank 0" : "");
  const Clock::time_point deadline = Clock::now() + options_.timeout;
  store_->set(Key(1, "rank/" + std::to_string(rank)), options_.member);
  std::vector<std::string> members;
  if (options_.coordinator) {
    for (int other = 0; other < world_size; ++other)
      members.push_back(store_->get(Key(1, "rank/" + std::to_string(other)), Until(deadline)));
    store_->set(Key(1, "members"), Joined(members));
    store_->set("membership/latest", "1");
  } else {
    members = WaitForMembers(1, deadline, options_.timeout);
  }
  EST_CHECK(static_cast<int>(members.size()) == world_size && members[static_cast<size_t>(rank)] == options_.member,
            Error, "generation 1 of the training group does not hold member '", options_.member, "' at rank ", rank,
            " of ", world_size, ": another job's members share this store");
  Log().info("Generation 1 of the training group: {} member(s); this one ('{}') is rank {}", world_size,
             options_.member, rank);
  return {1, std::move(members), rank};
}

std::vector<std::string> Membership::WaitForMembers(int64_t number, Clock::time_point deadline,
                                                    std::chrono::milliseconds patience) {
  try {
    return Split(store_->get(Key(number, "members"), Until(deadline)));
  } catch (const TimeoutError&) {
    EST_THROW(TimeoutError, "member '", options_.member, "' waited ", DescribeDuration(patience), " for generation ",
              number, " of the training group to form in ", store_->describe(),
              ": the chief forms it when a generation ends (a member lost, or a newcomer waiting while the group "
              "holds fewer than its most, ",
              options_.max_members, " members)");
  }
}

Generation Membership::Rejoin(const Generation& current, const std::vector<int>& lost_ranks,
                              const std::function<std::vector<int>()>& lost_later) {
  std::vector<std::string> expected;
  for (int rank = 0; rank < current.world_size(); ++rank)
    if (std::find(lost_ranks.begin(), lost_ranks.end(), rank) == lost_ranks.end())
      expected.push_back(current.members[static_cast<size_t>(rank)]);
  std::function<std::vector<std::string>()> gone;
  if (lost_later)
    gone = [&] {
      std::vector<std::string> members;
      for (int rank : lost_later())
        if (rank >= 0 && rank < current.world_size()) members.push_back(current.members[static_cast<size_t>(rank)]);
      return members;
    };
  std::optional<Generation> next =
      Join(current.number + 1, static_cast<int>(expected.size()), std::move(expected), current.world_size(), gone);
  EST_CHECK(next.has_value(), Error, "member '", options_.member, "' of generation ", current.number,
            " found the training ended while it re-formed the group");
  if (next->newcomer)
    Log().warn(
        "Member '{}' of generation {} came back after generation {} closed without it: it joined generation {} as a "
        "newcomer, taking the group's state",
        options_.member, current.number, current.number + 1, next->number);
  return std::move(*next);
}

std::optional<Generation> Membership::JoinAsNewcomer() {
  const int64_t latest =
      store_->check({"membership/latest"}) ? std::stoll(store_->get("membership/latest", options_.timeout)) : 0;
  std::optional<Generation> generation = Join(latest + 1, 0, {}, 0);
  if (generation) generation->newcomer = true;
  return generation;
}

bool Membership::NewcomerWaiting(const Generation& current) const {
  // A full group takes no newcomer: it waits until a member is lost.
  return current.world_size() < options_.max_members && store_->check({Key(current.number + 1, "arrival/1")});
}

void Membership::Beat() { store_->add(BeatWatch::Key(options_.member), 1); }

void Membership::CutOff(const Generation& current, const std::vector<int>& ranks) {
  EST_CHECK(options_.coordinator, Error, "only the coordinator cuts members off the training group");
  std::string text;
  for (int rank : ranks) text += (text.empty() ? "" : ",") + std::to_string(rank);
  store_->set(Key(current.number, "cut_off"), text);
}

std::vector<int> Membership::CutOffRanks(const Generation& current) const {
  const std::string key = Key(current.number, "cut_off");
  if (!store_->check({key})) return {};
  std::vector<int> ranks;
  const std::string text = store_->get(key, options_.timeout);
  for (size_t start = 0; start < text.size();) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    char* parsed = nullptr;
    const long rank = std::strtol(item.c_str(), &parsed, 10);
    EST_CHECK(!item.empty() && *parsed == '\0' && rank > 0 && rank < current.world_size(), Error,
              "the training group's store names '", item, "' cut off generation ", current.number,
              ", which has ranks 1 to ", current.world_size() - 1, " besides the coordinator");
    ranks.push_back(static_cast<int>(rank));
    start = end + 1;
  }
  return ranks;
}

void Membership::Finish(const Generation& current) {
  EST_CHECK(options_.coordinator, Error, "only the coordinator ends the training group's generations");
  store_->set(Key(current.number + 1, "members"), "");
}

std::optional<Generation> Membership::Join(int64_t number, int expected_count, std::vector<std::string> expected,
                                           int previous_size, const std::function<std::vector<std::string>()>& gone) {
  // The coordinator may wait `settle` for a member, then `replacement_wait`, before the time
  // it has to close a generation: a member waits that long more.
  const std::chrono::milliseconds patience =
      options_.timeout +
      (options_.coordinator ? std::chrono::milliseconds(0) : options_.settle + options_.replacement_wait);
  const Clock::time_point deadline = Clock::now() + patience;
  bool left_out = false;  // a generation closed without this member
  while (true) {
    if (store_->check({Key(number, "members")})) {
      if (store_->get(Key(number, "members"), options_.timeout).empty()) return std::nullopt;  // Finish
    } else {
      const int64_t arrival = store_->add(Key(number, "arrived"), 1);
      store_->set(Key(number, "arrival/" + std::to_string(arrival)), options_.member);
      std::vector<std::string> members;
      if (options_.coordinator) {
        members = Close(number, expected_count, expected, previous_size, gone);
        store_->set(Key(number, "members"), Joined(members));
        store_->set("membership/latest", std::to_string(number));
      } else {
        members = WaitForMembers(number, deadline, patience);
        if (members.empty()) return std::nullopt;  // Finish
      }
      const auto place = std::find(members.begin(), members.end(), options_.member);
      if (place != members.end()) {
        const int rank = static_cast<int>(place - members.begin());
        Log().info("Generation {} of the training group: {} member(s); this one ('{}') is rank {}", number,
                   members.size(), options_.member, rank);
        return Generation{number, std::move(members), rank, left_out};
      }
    }
    // Generation `number` closed without this member: it joins the next one as a newcomer.
    EST_CHECK(!options_.coordinator, Error, "the coordinator was left out of generation ", number);
    EST_CHECK(Clock::now() < deadline, TimeoutError, "member '", options_.member, "' found no generation to join in ",
              DescribeDuration(patience), " (the last was ", number, ", which closed without it)");
    ++number;
    left_out = true;
    expected_count = 0;
    expected.clear();
  }
}

std::vector<std::string> Membership::Close(int64_t number, int expected_count, std::vector<std::string> expected,
                                           int previous_size, const std::function<std::vector<std::string>()>& gone) {
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + options_.timeout;
  // The first generation waits for its members as long as a rendezvous does.
  const Clock::time_point settled = number == 1 ? deadline : start + options_.settle;
  std::optional<Clock::time_point> replacement_deadline;
  // A first generation expects a number of members; a later one, those of the last not lost.
  const bool by_count = expected.empty();
  std::vector<std::string> arrived;  // in arrival order, each once
  BeatWatch beats(store_, options_.beat_lease, options_.beat_interval);  // of the expected members that have not arrived
  while (true) {
    const int64_t count = store_->add(Key(number, "arrived"), 0);
    for (int64_t i = static_cast<int64_t>(arrived.size()) + 1; i <= count; ++i) {
      const std::string member = store_->get(Key(number, "arrival/" + std::to_string(i)), options_.timeout);
      arrived.push_back(member);
    }
    if (gone)
      for (const std::string& member : gone())
        if (!Contains(arrived, member) && member != options_.member)
          expected.erase(std::remove(expected.begin(), expected.end(), member), expected.end());
    // An expected member that has not arrived, nor beaten for beat_lease, is gone or stopped.
    if (options_.beat_lease.count() > 0) {
      std::vector<std::string> absent;
      for (const std::string& member : expected)
        if (!Contains(arrived, member) && member != options_.member) absent.push_back(member);
      for (const BeatWatch::Silent& silent : beats.Read(absent)) {
        Log().warn(
            "Generation {} of the training group forms without '{}' of generation {}, which has not beaten for {} "
            "(its process or host is gone, or it is stopped): it may join a later one as a newcomer",
            number, silent.member, number - 1, DescribeDuration(silent.silent_for));
        expected.erase(std::remove(expected.begin(), expected.end(), silent.member), expected.end());
      }
    }
    std::vector<std::string> members{options_.member};
    for (const std::string& member : expected)
      if (Contains(arrived, member) && !Contains(members, member)) members.push_back(member);
    for (const std::string& member : arrived)
      if (!Contains(members, member)) members.push_back(member);
    if (members.size() > static_cast<size_t>(options_.max_members))
      members.resize(static_cast<size_t>(options_.max_members));

    const auto now = Clock::now();
    const bool all_expected = by_count ? static_cast<int>(arrived.size()) >= expected_count
                                       : std::all_of(expected.begin(), expected.end(),
                                                     [&](const std::string& m) { return Contains(arrived, m); });
    const bool enough = static_cast<int>(members.size()) >= options_.min_members;
    // Closes the generation with `members`, naming the expected members it goes on without.
    const auto close = [&] {
      for (const std::string& member : expected)
        if (!Contains(members, member))
          Log().warn(
              "Generation {} of the training group closes without '{}' of generation {}, which did not come within "
              "{} (stopped, hung, or cut off from the chief's store): it may join a later one as a newcomer",
              number, member, number - 1,
              DescribeDuration(std::chrono::duration_cast<std::chrono::milliseconds>(now - start)));
      return members;
    };
    if ((all_expected || now >= settled) && enough) {
      if (static_cast<int>(members.size()) >= previous_size || options_.replacement_wait.count() == 0) return close();
      if (!replacement_deadline) replacement_deadline = now + options_.replacement_wait;
      if (now >= *replacement_deadline) return close();
    }
    if (now >= deadline) {
      EST_CHECK(enough, TimeoutError, "generation ", number, " of the training group has ", members.size(),
                " member(s) after ", DescribeDuration(options_.timeout), ", fewer than the ", options_.min_members,
                " it needs (min_members)");
      return close();
    }
    Clock::time_point wake = std::min(deadline, now + kArrivalSlice);
    if (replacement_deadline) wake = std::min(wake, *replacement_deadline);
    try {
      store_->wait({Key(number, "arrival/" + std::to_string(count + 1))}, Until(wake));
    } catch (const TimeoutError&) {
      // No arrival in this slice: look at the clock again.
    }
  }
}

}  // namespace est::distribute
