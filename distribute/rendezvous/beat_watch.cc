#include "distribute/rendezvous/beat_watch.h"

#include <utility>

#include "distribute/rendezvous/store.h"

namespace est::distribute {

BeatWatch::BeatWatch(std::shared_ptr<Store> store, std::chrono::milliseconds lease)
    : store_(std::move(store)), lease_(lease) {}

std::string BeatWatch::Key(const std::string& member) { return "membership/beat/" + member; }

std::vector<BeatWatch::Silent> BeatWatch::Read(const std::vector<std::string>& members) {
  const auto now = std::chrono::steady_clock::now();
  std::vector<Silent> silent;
  for (const std::string& member : members) {
    const int64_t count = store_->add(Key(member), 0);
    LastBeat& last = last_.try_emplace(member, LastBeat{count, now}).first->second;
    if (last.count != count) last = {count, now};
    const auto quiet = std::chrono::duration_cast<std::chrono::milliseconds>(now - last.seen);
    if (quiet >= lease_) silent.push_back({member, quiet});
  }
  return silent;
}

}  // namespace est::distribute
