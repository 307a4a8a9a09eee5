#pragma once
// A Collective that times the all-reduces of another, for the bandwidth benchmark.

#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "distribute/collective/collective.h"

namespace est_bench {

/// Forwards every call to `inner`; records the bytes, start and end of each allreduce.
class TimingCollective : public est::distribute::Collective {
 public:
  explicit TimingCollective(std::unique_ptr<est::distribute::Collective> inner) : inner_(std::move(inner)) {}
  int rank() const override { return inner_->rank(); }
  int world_size() const override { return inner_->world_size(); }
  std::string name() const override { return inner_->name(); }
  void allreduce(at::Tensor& tensor, est::distribute::ReduceOp op) override {
    const auto start = Clock::now();
    inner_->allreduce(tensor, op);
    const auto end = Clock::now();
    std::lock_guard<std::mutex> lock(mutex_);
    records_.push_back({tensor.numel() * static_cast<int64_t>(tensor.element_size()), start, end});
  }
  void broadcast(at::Tensor& tensor, int root) override { inner_->broadcast(tensor, root); }
  at::Tensor allgather(const at::Tensor& tensor) override { return inner_->allgather(tensor); }
  void barrier() override { inner_->barrier(); }
  bool allreduce_computes_on_cpu() const override { return inner_->allreduce_computes_on_cpu(); }

  /// Forgets what was recorded (after warm-up).
  void reset() {
    std::lock_guard<std::mutex> lock(mutex_);
    records_.clear();
  }
  /// Totals of the all-reduces of at least `min_bytes` and their bus bandwidth (bytes ·
  /// 2(n−1)/n per second, as NCCL's tests define it), timed from each call on this rank, and
  /// the trace that splits each call's time in two: waiting until the last rank made the call
  /// (its start times, on the machine's one monotonic clock, are all-gathered: every rank calls
  /// this) and the all-reduce itself from then on, whose bus bandwidth is "after_arrival";
  /// "buckets" gives both per all-reduce size (a bucket of the gradient reducer).
  nlohmann::json stats_json(int64_t min_bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<int64_t> starts;
    for (const auto& record : records_) starts.push_back(Nanoseconds(record.start));
    at::Tensor mine = at::from_blob(starts.data(), {static_cast<int64_t>(starts.size())}, at::kLong).clone();
    const at::Tensor all = inner_->allgather(mine);  // [world_size, calls]
    int64_t bytes = 0, calls = 0;
    double seconds = 0, waiting = 0, after_arrival = 0;
    std::map<int64_t, std::array<double, 3>> buckets;  // size -> calls, waiting, after arrival
    for (size_t i = 0; i < records_.size(); ++i) {
      const auto& record = records_[i];
      if (record.bytes < min_bytes) continue;
      const int64_t last_start = all.select(1, static_cast<int64_t>(i)).max().item<int64_t>();
      const double wait = std::max<double>(0, (last_start - Nanoseconds(record.start)) * 1e-9);
      const double total = std::chrono::duration<double>(record.end - record.start).count();
      bytes += record.bytes;
      seconds += total;
      waiting += wait;
      after_arrival += total - wait;
      ++calls;
      auto& bucket = buckets[record.bytes];
      bucket[0] += 1;
      bucket[1] += wait;
      bucket[2] += total - wait;
    }
    const double n = world_size();
    const auto bus = [&](double bus_bytes, double time) { return time > 0 ? bus_bytes / time / 1e9 : 0.0; };
    nlohmann::json trace = nlohmann::json::array();
    for (const auto& [size, sums] : buckets)
      trace.push_back({{"bytes", size}, {"calls", sums[0]}, {"wait_ms", sums[1] / sums[0] * 1e3},
                       {"allreduce_ms", sums[2] / sums[0] * 1e3},
                       {"bus_gbytes_per_sec_after_arrival", bus(size * 2 * (n - 1) / n, sums[2] / sums[0])}});
    const double bus_bytes = static_cast<double>(bytes) * 2 * (n - 1) / n;
    return {{"bytes", bytes},
            {"seconds", seconds},
            {"calls", calls},
            {"bus_gbytes_per_sec", bus(bus_bytes, seconds)},
            {"waiting_seconds", waiting},
            {"bus_gbytes_per_sec_after_arrival", bus(bus_bytes, after_arrival)},
            {"buckets", trace}};
  }

 private:
  std::unique_ptr<est::distribute::Collective> inner_;
  std::mutex mutex_;
  using Clock = std::chrono::steady_clock;  // CLOCK_MONOTONIC: one clock for every process of the machine
  struct Record {
    int64_t bytes;
    Clock::time_point start, end;
  };
  static int64_t Nanoseconds(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  }
  std::vector<Record> records_;
};

}  // namespace est_bench
