#pragma once
/// BeatWatch: the coordinator's view of the members' beats (Membership::Beat), telling a
/// member that lives from one whose process or host is gone, or that is stopped.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace est::distribute {

class Store;

/// Reads the beat counters of members in the training group's store and says which have not
/// beaten for a lease. The watch measures on the coordinator's clock, from when it first saw
/// each count: members' clocks play no part. One thread at a time.
///
/// Members that fall silent together are named together. A host that hangs stops all its
/// workers at one instant, but their last beats lie up to a beat interval apart, so one passes
/// the lease up to a beat (and a read) before the others. While a member has passed the lease
/// and another has missed a beat without passing it yet (silent for two beat intervals), the
/// watch names none, until that other one beats again or passes the lease too; at most until
/// the first has been silent for twice the lease.
class BeatWatch {
 public:
  /// A member that has not beaten for the lease, and how long it has been silent.
  struct Silent {
    std::string member;
    std::chrono::milliseconds silent_for;
  };

  /// Watches the beats in `store` (the training group's keys) with `lease`, of members that
  /// beat every `beat_interval` (MemberHeartbeat's).
  BeatWatch(std::shared_ptr<Store> store, std::chrono::milliseconds lease, std::chrono::milliseconds beat_interval);

  /// The store key of `member`'s beat counter.
  static std::string Key(const std::string& member);

  /// Reads the beats of `members` now: those whose count has not changed for the lease, in the
  /// order given, or none while others are falling silent with them (above). A member read for
  /// the first time gets a whole lease from now.
  std::vector<Silent> Read(const std::vector<std::string>& members);

 private:
  struct LastBeat {
    int64_t count;
    std::chrono::steady_clock::time_point seen;  ///< when the watch first read `count`
  };

  std::shared_ptr<Store> store_;
  std::chrono::milliseconds lease_;
  std::chrono::milliseconds beat_interval_;
  std::map<std::string, LastBeat> last_;
};

}  // namespace est::distribute
