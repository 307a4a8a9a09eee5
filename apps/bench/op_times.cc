#include "apps/bench/op_times.h"

#include <ATen/record_function.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace est_bench {
namespace {

using Clock = std::chrono::steady_clock;

// An op being timed in this thread: when it began and how long the ops it called took.
struct OpFrame {
  Clock::time_point start;
  double called_us = 0;
  std::string name;
};

thread_local std::vector<OpFrame> open_ops;
std::atomic<bool> recording{false};
std::mutex totals_mutex;
std::map<std::string, double> totals_us;
at::CallbackHandle callback = 0;

std::unique_ptr<at::ObserverContext> OnOpStart(const at::RecordFunction& fn) {
  open_ops.push_back({Clock::now(), 0.0, fn.name()});
  return nullptr;
}

void OnOpEnd(const at::RecordFunction&, at::ObserverContext*) {
  if (open_ops.empty()) return;  // began before StartOpTimes
  OpFrame op = std::move(open_ops.back());
  open_ops.pop_back();
  const double us = std::chrono::duration<double, std::micro>(Clock::now() - op.start).count();
  if (!open_ops.empty()) open_ops.back().called_us += us;
  if (!recording.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(totals_mutex);
  totals_us[op.name] += us - op.called_us;
}

}  // namespace

void StartOpTimes() {
  {
    std::lock_guard<std::mutex> lock(totals_mutex);
    totals_us.clear();
  }
  callback = at::addGlobalCallback(at::RecordFunctionCallback(OnOpStart, OnOpEnd).needsInputs(false));
  recording = true;
}

nlohmann::json StopOpTimes(int64_t steps) {
  recording = false;
  at::removeCallback(callback);
  nlohmann::json per_step = nlohmann::json::object();
  std::lock_guard<std::mutex> lock(totals_mutex);
  for (const auto& [name, us] : totals_us) per_step[name] = us / static_cast<double>(steps);
  return per_step;
}

}  // namespace est_bench
