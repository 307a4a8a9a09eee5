#pragma once
// A Collective that times the all-reduces of another, for the bandwidth benchmark.

#include <ATen/core/Tensor.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "distribute/collective/collective.h"

namespace est_bench {

/// Forwards every call to `inner`; records the bytes and seconds of each allreduce.
class TimingCollective : public est::distribute::Collective {
 public:
  explicit TimingCollective(std::unique_ptr<est::distribute::Collective> inner) : inner_(std::move(inner)) {}
  int rank() const override { return inner_->rank(); }
  int world_size() const override { return inner_->world_size(); }
  std::string name() const override { return inner_->name(); }
  void allreduce(at::Tensor& tensor, est::distribute::ReduceOp op) override {
    const auto start = std::chrono::steady_clock::now();
    inner_->allreduce(tensor, op);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::lock_guard<std::mutex> lock(mutex_);
    records_.emplace_back(tensor.numel() * static_cast<int64_t>(tensor.element_size()), seconds);
  }
  void broadcast(at::Tensor& tensor, int root) override { inner_->broadcast(tensor, root); }
  at::Tensor allgather(const at::Tensor& tensor) override { return inner_->allgather(tensor); }
  void barrier() override { inner_->barrier(); }

  /// Forgets what was recorded (after warm-up).
  void reset() {
    std::lock_guard<std::mutex> lock(mutex_);
    records_.clear();
  }
  /// Totals of the all-reduces of at least `min_bytes`, and their bus bandwidth
  /// (bytes · 2(n−1)/n per second, as NCCL's tests define it).
  nlohmann::json stats_json(int64_t min_bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    int64_t bytes = 0;
    double seconds = 0;
    int64_t calls = 0;
    for (const auto& [size, time] : records_) {
      if (size < min_bytes) continue;
      bytes += size;
      seconds += time;
      ++calls;
    }
    const double n = world_size();
    const double bus_bytes = static_cast<double>(bytes) * 2 * (n - 1) / n;
    return {{"bytes", bytes}, {"seconds", seconds}, {"calls", calls},
            {"bus_gbytes_per_sec", seconds > 0 ? bus_bytes / seconds / 1e9 : 0.0}};
  }

 private:
  std::unique_ptr<est::distribute::Collective> inner_;
  std::mutex mutex_;
  std::vector<std::pair<int64_t, double>> records_;
};

}  // namespace est_bench
