#include "distribute/elastic/beat_watch.h"

#include <algorithm>
#include <utility>

#include "distribute/rendezvous/store.h"

namespace est::distribute {

BeatWatch::BeatWatch(std::shared_ptr<Store> store, std::chrono::milliseconds lease,
                     std::chrono::milliseconds beat_interval)
    : store_(std::move(store)), lease_(lease), beat_interval_(beat_interval) {}

std::string BeatWatch::Key(const std::string& member) { return "membership/beat/" + member; }

std::vector<BeatWatch::Silent> BeatWatch::Read(const std::vector<std::string>& members) {
  const auto now = std::chrono::steady_clock::now();
  std::vector<Silent> silent;
  std::chrono::milliseconds longest(0);
  bool falling_silent = false;  // a member that missed a beat but has not passed the lease
  for (const std::string& member : members) {
    const int64_t count = store_->add(Key(member), 0);
    LastBeat& last = last_.try_emplace(member, LastBeat{count, now}).first->second;
    if (last.count != count) last = {count, now};
    const auto quiet = std::chrono::duration_cast<std::chrono::milliseconds>(now - last.seen);
    if (quiet >= lease_) {
      silent.push_back({member, quiet});
      longest = std::max(longest, quiet);
    } else if (quiet >= 2 * beat_interval_) {
      falling_silent = true;
    }
  }
  if (falling_silent && longest < 2 * lease_) return {};
  return silent;
}

}  // namespace est::distribute
