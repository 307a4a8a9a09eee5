#pragma once
/// MemberHeartbeat: a member of the training group telling the coordinator that it lives, from
/// a thread of its own, so that a member whose process or host is gone (or that is stopped) is
/// told from one that is only slow to arrive.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace est::distribute {

/// Calls `beat` (Membership::Beat) at once and then every `interval`, on a thread of its own,
/// until destroyed. A beat that throws (the store unreachable for a while) is tried again at
/// the next interval.
class MemberHeartbeat {
 public:
  /// Starts beating.
  MemberHeartbeat(std::function<void()> beat, std::chrono::milliseconds interval);
  /// Stops beating; waits for the beat in flight, if any.
  ~MemberHeartbeat();
  MemberHeartbeat(const MemberHeartbeat&) = delete;
  MemberHeartbeat& operator=(const MemberHeartbeat&) = delete;

 private:
  void run();

  std::function<void()> beat_;
  std::chrono::milliseconds interval_;
  std::mutex mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace est::distribute
