#include <utility>

#include "common/error.h"
#include "distribute/rendezvous/store.h"

namespace est::distribute {
namespace {

// Every key of `base` under "prefix/"; the base store's errors name the full keys.
class PrefixStore final : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> base)
      : prefix_(std::move(prefix) + "/"), base_(std::move(base)) {}

  void set(const std::string& key, const std::string& value) override { base_->set(Full(key), value); }
  std::string get(const std::string& key, std::chrono::milliseconds timeout) override {
    return base_->get(Full(key), timeout);
  }
  int64_t add(const std::string& key, int64_t delta) override { return base_->add(Full(key), delta); }
  bool check(const std::vector<std::string>& keys) override { return base_->check(Full(keys)); }
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    base_->wait(Full(keys), timeout);
  }
  bool remove(const std::string& key) override { return base_->remove(Full(key)); }
  std::vector<std::string> list(const std::string& prefix) override {
    std::vector<std::string> keys = base_->list(Full(prefix));
    for (std::string& key : keys) key.erase(0, prefix_.size());
    return keys;
  }
  std::string describe() const override { return base_->describe(); }

 private:
  std::string Full(const std::string& key) const { return prefix_ + key; }
  std::vector<std::string> Full(const std::vector<std::string>& keys) const {
    std::vector<std::string> full;
    full.reserve(keys.size());
    for (const std::string& key : keys) full.push_back(Full(key));
    return full;
  }

  std::string prefix_;
  std::shared_ptr<Store> base_;
};

}  // namespace

std::shared_ptr<Store> CreatePrefixStore(const std::string& prefix, std::shared_ptr<Store> base) {
  EST_CHECK(base != nullptr, ConfigError, "prefix store '", prefix, "': the base store is null");
  EST_CHECK(!prefix.empty(), ConfigError, "prefix store over ", base->describe(), ": the prefix is empty");
  return std::make_shared<PrefixStore>(prefix, std::move(base));
}

}  // namespace est::distribute
