#include "distribute/elastic/member_heartbeat.h"

#include <utility>

#include "common/error.h"
#include "common/logging.h"

namespace est::distribute {

MemberHeartbeat::MemberHeartbeat(std::function<void()> beat, std::chrono::milliseconds interval)
    : beat_(std::move(beat)), interval_(interval) {
  EST_CHECK(beat_ != nullptr && interval_.count() > 0, ConfigError,
            "MemberHeartbeat: needs a beat and a positive interval, got ", interval_.count(), " ms");
  thread_ = std::thread([this] { run(); });
}

MemberHeartbeat::~MemberHeartbeat() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  stop_.notify_all();
  thread_.join();
}

void MemberHeartbeat::run() {
  bool failing = false;  // the last beat failed: the next failure is not logged again
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    try {
      beat_();
      failing = false;
    } catch (const Error& failure) {
      // The coordinator's store is away: the training's own calls report it.
      if (!failing) Log().debug("MemberHeartbeat: a beat failed: {}", failure.what());
      failing = true;
    }
    lock.lock();
    stop_.wait_for(lock, interval_, [this] { return stopping_; });
  }
}

}  // namespace est::distribute
