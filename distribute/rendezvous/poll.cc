#include "distribute/rendezvous/poll.h"

#include <algorithm>
#include <thread>

namespace est::distribute {

bool PollUntil(std::chrono::steady_clock::time_point deadline, const std::function<bool()>& done) {
  constexpr std::chrono::steady_clock::duration kLongestPause = std::chrono::milliseconds(20);
  std::chrono::steady_clock::duration pause = std::chrono::milliseconds(1);
  while (!done()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    std::this_thread::sleep_for(std::min(pause, deadline - now));
    pause = std::min(pause * 2, kLongestPause);
  }
  return true;
}

}  // namespace est::distribute
