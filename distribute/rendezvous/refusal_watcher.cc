#include "distribute/rendezvous/refusal_watcher.h"

#include <utility>

#include "common/error.h"
#include "distribute/rendezvous/rendezvous.h"

namespace est::distribute {

RefusalWatcher::RefusalWatcher(std::shared_ptr<Store> store, std::string job_id, std::chrono::milliseconds period)
    : store_(std::move(store)), job_id_(std::move(job_id)), period_(period), thread_([this] { Watch(); }) {}

RefusalWatcher::~RefusalWatcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void RefusalWatcher::Watch() {
  bool last = false;
  while (!last) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      last = wake_.wait_for(lock, period_, [this] { return stopping_; });
    }
    try {
      WarnOfRefusedJobs(*store_, job_id_);
    } catch (const Error&) {
      return;  // the store is gone
    }
  }
}

}  // namespace est::distribute
