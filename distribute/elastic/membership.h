#pragma once
/// Membership: the generations of a job's training group, formed through the chief's store.
/// A lost worker ends a generation; the members left, and any newcomer (a replacement), form
/// the next one, whose ranks keep the survivors' order. The chief, whose store holds the
/// generations, closes each one.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace est::distribute {

class Store;

/// One generation of the training group.
struct Generation {
  /// 1 for the job's first generation, then one more at each change of members.
  int64_t number = 0;
  /// The members, in rank order.
  std::vector<std::string> members;
  /// This member's rank: its index in `members`.
  int rank = 0;
  /// Whether this member entered it as a newcomer, holding none of the group's state: one new
  /// to the job, or one that the generation it rejoined for closed without (it came back later
  /// than `settle`: stopped, hung, or cut off from the store meanwhile).
  bool newcomer = false;

  int world_size() const { return static_cast<int>(members.size()); }
};

/// How a member joins generations, and when the coordinator closes one.
struct MembershipOptions {
  /// This process's id in the job, unique to the process: a restarted task is a new member.
  std::string member;
  /// Whether this member closes the generations: the chief, which serves the store and is
  /// rank 0 of every generation.
  bool coordinator = false;
  /// The fewest members a generation may close with.
  int min_members = 1;
  /// The most: members that arrive beyond it wait for a later generation.
  int max_members = 1 << 20;
  /// How long the coordinator waits for members it expects (those of the last generation that
  /// were not named lost) before it closes the generation without them.
  std::chrono::milliseconds settle = std::chrono::seconds(10);
  /// Once the members it expects are in, how long the coordinator waits for newcomers while
  /// the generation is smaller than the one before (a replacement); 0 closes it at once.
  std::chrono::milliseconds replacement_wait = std::chrono::milliseconds(0);
  /// How long the coordinator waits for a member it expects, that has not arrived, to beat
  /// (Beat()) before it stops expecting it, sooner than `settle`: the member's process or host
  /// is gone, or it is stopped. 0: the coordinator reads no beats.
  std::chrono::milliseconds beat_lease = std::chrono::milliseconds(0);
  /// How often members beat (their MemberHeartbeat's interval): the coordinator names those
  /// that fall silent within a beat of each other together (BeatWatch).
  std::chrono::milliseconds beat_interval = std::chrono::milliseconds(500);
  /// How long the coordinator waits for min_members to arrive, and a member for its
  /// generation to close, beyond the coordinator's settle and replacement_wait.
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
};

/// A member's view of the generations in `store` (a view private to the job, shared by every
/// member). Thread-safe for distinct members.
class Membership {
 public:
  /// Throws ConfigError for an empty member id or bounds that cannot hold.
  Membership(std::shared_ptr<Store> store, MembershipOptions options);

  /// Joins the job's first generation; the coordinator closes it once `expected` members have
  /// arrived (the cluster's size), or after `settle` with at least min_members.
  Generation JoinFirst(int expected);
  /// Joins the job's first generation at `rank`, the place a rendezvous gave this member (the
  /// coordinator's is 0): the generation holds the `world_size` members in that order once
  /// every one has joined, so ranks stay those of the cluster.
  Generation JoinFirstAt(int rank, int world_size);
  /// After `current` failed: joins the next generation. The coordinator expects the members of
  /// `current` except those at `lost_ranks`, and closes without the others after `settle`;
  /// while it waits, it stops expecting those at the ranks `lost_later` (if given) names.
  Generation Rejoin(const Generation& current, const std::vector<int>& lost_ranks,
                    const std::function<std::vector<int>()>& lost_later = nullptr);
  /// A member new to the job (a replacement, a task started later) joins the generation that
  /// forms next; nullopt when the training ended first (Finish).
  std::optional<Generation> JoinAsNewcomer();
  /// Whether a member waits to join the generation after `current`, which holds fewer than
  /// max_members: the coordinator asks between steps, and ends `current` to let it in.
  bool NewcomerWaiting(const Generation& current) const;
  /// Tells the coordinator that this member lives: a member beats more often than the
  /// coordinator's beat_lease, from a thread of its own (MemberHeartbeat).
  void Beat();
  /// The coordinator, having found members of `current` at `ranks` silent (BeatWatch) while
  /// the group trains: records that it cut them off, so that every member cuts its own
  /// connections to them (CutOffRanks) and no call of the generation waits on them.
  void CutOff(const Generation& current, const std::vector<int>& ranks);
  /// The ranks of `current` that the coordinator cut off, ascending as it named them; empty
  /// while it cut none. One store call: members ask at each beat.
  std::vector<int> CutOffRanks(const Generation& current) const;
  /// The coordinator, once the training of `current` ended: no generation forms after it, and
  /// newcomers waiting for one, or arriving later, learn so (JoinAsNewcomer gives nullopt).
  void Finish(const Generation& current);

 private:
  /// The members' key of generation `number`, waited for until `deadline`, `patience` after
  /// the wait began (for the message of a TimeoutError).
  std::vector<std::string> WaitForMembers(int64_t number, std::chrono::steady_clock::time_point deadline,
                                          std::chrono::milliseconds patience);
  /// Joins generation `number`, or the first after it that takes this member; nullopt when
  /// the training ended first.
  std::optional<Generation> Join(int64_t number, int expected_count, std::vector<std::string> expected,
                                 int previous_size, const std::function<std::vector<std::string>()>& gone = nullptr);
  /// The coordinator closes generation `number` (see the class comment); `gone`, when given,
  /// names expected members it need not wait for any more.
  std::vector<std::string> Close(int64_t number, int expected_count, std::vector<std::string> expected,
                                 int previous_size, const std::function<std::vector<std::string>()>& gone);

  std::shared_ptr<Store> store_;
  MembershipOptions options_;
};

}  // namespace est::distribute
