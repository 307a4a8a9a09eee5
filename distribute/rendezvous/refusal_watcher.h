#pragma once
/// RefusalWatcher: the chief's eye on its store after the rendezvous, warning of every
/// process of another job that tried to join (see WarnOfRefusedJobs).

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace est::distribute {

class Store;

/// Calls WarnOfRefusedJobs(store, job_id) every `period` on a thread of its own until
/// destroyed (once more then), or until the store fails (it is gone: nothing to watch).
class RefusalWatcher {
 public:
  RefusalWatcher(std::shared_ptr<Store> store, std::string job_id, std::chrono::milliseconds period);
  ~RefusalWatcher();
  RefusalWatcher(const RefusalWatcher&) = delete;
  RefusalWatcher& operator=(const RefusalWatcher&) = delete;

 private:
  void Watch();

  std::shared_ptr<Store> store_;
  std::string job_id_;
  std::chrono::milliseconds period_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace est::distribute
