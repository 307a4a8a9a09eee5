// The in-memory store: a KeyTable of this process, for ranks that are threads.

#include "common/error.h"
#include "distribute/rendezvous/error_text.h"
#include "distribute/rendezvous/key_table.h"
#include "distribute/rendezvous/store.h"

namespace est::distribute {
namespace {

class InMemoryStore final : public Store {
 public:
  void set(const std::string& key, const std::string& value) override { table_.set(key, value); }
  std::string get(const std::string& key, std::chrono::milliseconds timeout) override {
    std::optional<std::string> value = table_.get(key, std::chrono::steady_clock::now() + timeout);
    EST_CHECK(value.has_value(), TimeoutError, describe(), ": ", DescribeKeys({key}), " not set within ",
              DescribeDuration(timeout));
    return *std::move(value);
  }
  int64_t add(const std::string& key, int64_t delta) override {
    const std::optional<int64_t> value = table_.add(key, delta);
    EST_CHECK(value.has_value(), CommunicationError, describe(), ": add to '", key, "': it holds no integer");
    return *value;
  }
  bool check(const std::vector<std::string>& keys) override {
    return table_.wait(keys, std::chrono::steady_clock::now()).empty();
  }
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    const std::vector<std::string> missing = table_.wait(keys, std::chrono::steady_clock::now() + timeout);
    EST_CHECK(missing.empty(), TimeoutError, describe(), ": ", DescribeKeys(missing), " not set within ",
              DescribeDuration(timeout));
  }
  bool remove(const std::string& key) override { return table_.remove(key); }
  std::vector<std::string> list(const std::string& prefix) override { return table_.list(prefix); }
  std::string describe() const override { return "in-memory store"; }

 private:
  detail::KeyTable table_;
};

}  // namespace

std::shared_ptr<Store> CreateInMemoryStore() { return std::make_shared<InMemoryStore>(); }

}  // namespace est::distribute
