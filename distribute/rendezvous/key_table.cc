#include "distribute/rendezvous/key_table.h"

#include <algorithm>

namespace est::distribute::detail {

void KeyTable::set(const std::string& key, const std::string& value) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    values_[key] = value;
  }
  changed_.notify_all();
}

std::optional<int64_t> KeyTable::add(const std::string& key, int64_t delta) {
  int64_t value = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = values_.find(key);
    if (found != values_.end() && !found->second.empty()) {
      try {
        size_t used = 0;
        value = std::stoll(found->second, &used);
        if (used != found->second.size()) return std::nullopt;
      } catch (const std::exception&) {
        return std::nullopt;
      }
    }
    value += delta;
    values_[key] = std::to_string(value);
  }
  changed_.notify_all();
  return value;
}

std::vector<std::string> KeyTable::wait(const std::vector<std::string>& keys, Deadline deadline,
                                        const Cancelled& cancelled) {
  std::unique_lock<std::mutex> lock(mutex_);
  return wait_locked(lock, keys, deadline, cancelled);
}

std::optional<std::string> KeyTable::get(const std::string& key, Deadline deadline, const Cancelled& cancelled) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!wait_locked(lock, {key}, deadline, cancelled).empty()) return std::nullopt;
  return values_.at(key);
}

bool KeyTable::remove(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  return values_.erase(key) > 0;
}

std::vector<std::string> KeyTable::list(const std::string& prefix) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> keys;
  for (auto it = values_.lower_bound(prefix);
       it != values_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it)
    keys.push_back(it->first);
  return keys;
}

std::vector<std::string> KeyTable::wait_locked(std::unique_lock<std::mutex>& lock,
                                               const std::vector<std::string>& keys, Deadline deadline,
                                               const Cancelled& cancelled) {
  for (;;) {
    std::vector<std::string> missing;
    for (const auto& key : keys)
      if (!values_.count(key)) missing.push_back(key);
    if (missing.empty() || std::chrono::steady_clock::now() >= deadline || (cancelled && cancelled()))
      return missing;
    // Wakes on a change, at the deadline, and every 100 ms to ask `cancelled`.
    changed_.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(100)));
  }
}

}  // namespace est::distribute::detail
