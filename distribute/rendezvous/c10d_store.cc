#include "distribute/rendezvous/c10d_store.h"

#include <c10/util/Logging.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <utility>

#include "common/error.h"
#include "distribute/rendezvous/error_text.h"
#include "distribute/rendezvous/poll.h"

namespace est::distribute::detail {
namespace {

// Runs one call into c10d, turning its errors into CommunicationError naming the store.
template <typename Body>
auto CallC10d(const std::string& description, const char* operation, const std::vector<std::string>& keys,
              Body&& body) {
  try {
    return body();
  } catch (const c10::Error& error) {
    EST_THROW(CommunicationError, description, ": ", operation, " ", DescribeKeys(keys),
              " failed: ", error.what_without_backtrace());
  } catch (const std::exception& error) {
    EST_THROW(CommunicationError, description, ": ", operation, " ", DescribeKeys(keys), " failed: ", error.what());
  }
}

class C10dStore final : public Store {
 public:
  C10dStore(c10::intrusive_ptr<c10d::Store> store, std::string description)
      : store_(std::move(store)), description_(std::move(description)) {}

  void set(const std::string& key, const std::string& value) override {
    CallC10d(description_, "set", {key}, [&] { store_->set(key, std::vector<uint8_t>(value.begin(), value.end())); });
  }

  std::string get(const std::string& key, std::chrono::milliseconds timeout) override {
    wait({key}, timeout);
    return CallC10d(description_, "get", {key}, [&] {
      const std::vector<uint8_t> value = store_->get(key);
      return std::string(value.begin(), value.end());
    });
  }

  int64_t add(const std::string& key, int64_t delta) override {
    return CallC10d(description_, "add to", {key}, [&] { return store_->add(key, delta); });
  }

  bool check(const std::vector<std::string>& keys) override {
    return CallC10d(description_, "check", keys, [&] { return store_->check(keys); });
  }

  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    if (PollUntil(std::chrono::steady_clock::now() + timeout, [&] { return check(keys); })) return;
    std::vector<std::string> missing;
    for (const std::string& key : keys) {
      if (!check({key})) missing.push_back(key);
    }
    if (missing.empty()) return;
    EST_THROW(TimeoutError, description_, ": ", DescribeKeys(missing), " not set within ",
              DescribeDuration(timeout));
  }

  std::string describe() const override { return description_; }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  std::string description_;
};

}  // namespace

void QuietC10dWarnings() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (std::getenv("TORCH_CPP_LOG_LEVEL") != nullptr) return;  // the user's own choice stands
    constexpr int kError = 2;                                      // c10's levels: 0 info, 1 warning, 2 error
    if (FLAGS_caffe2_log_level >= kError) return;
    FLAGS_caffe2_log_level = kError;
    c10::UpdateLoggingLevelsFromFlags();
  });
}

std::shared_ptr<Store> WrapC10dStore(c10::intrusive_ptr<c10d::Store> store, std::string description) {
  return std::make_shared<C10dStore>(std::move(store), std::move(description));
}

}  // namespace est::distribute::detail
