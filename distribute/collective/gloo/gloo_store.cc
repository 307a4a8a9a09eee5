#include "distribute/collective/gloo/gloo_store.h"

#include <gloo/rendezvous/store.h>

#include <utility>

namespace est::distribute::detail {
namespace {

class GlooStore final : public gloo::rendezvous::Store {
 public:
  GlooStore(std::shared_ptr<distribute::Store> store, std::chrono::milliseconds timeout)
      : store_(std::move(store)), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    store_->set(key, std::string(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    const std::string value = store_->get(key, timeout_);
    return std::vector<char>(value.begin(), value.end());
  }
  void wait(const std::vector<std::string>& keys) override { store_->wait(keys, timeout_); }
  // Gloo's "no timeout" (zero) waits our timeout: nothing waits forever.
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    store_->wait(keys, timeout.count() > 0 ? timeout : timeout_);
  }

 private:
  std::shared_ptr<distribute::Store> store_;
  std::chrono::milliseconds timeout_;
};

}  // namespace

std::unique_ptr<gloo::rendezvous::Store> CreateGlooStore(std::shared_ptr<Store> store,
                                                         std::chrono::milliseconds timeout) {
  return std::make_unique<GlooStore>(std::move(store), timeout);
}

}  // namespace est::distribute::detail
