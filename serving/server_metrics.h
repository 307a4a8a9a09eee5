#pragma once
/// ServerMetrics: what est-serve counts for Prometheus (its /metrics page, in Prometheus' text
/// exposition format 0.0.4): the calls of each API by status, their latency, and the served
/// models' batches, queues and versions.

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace est::serving {

class ModelRegistry;

/// The counts of one server; thread-safe.
class ServerMetrics {
 public:
  /// One call answered by `api` ("kserve_grpc", "tf_serving_grpc", "kserve_rest",
  /// "tf_serving_rest") with `code` (a gRPC status name or an HTTP status), in `seconds`.
  void record(const std::string& api, const std::string& code, double seconds);

  /// The metrics page: est_serve_requests_total{api,code}, est_serve_request_duration_seconds
  /// (a histogram by api), and of each model of `models`: est_serve_batches_total,
  /// est_serve_batch_size (a histogram of examples per model call), est_serve_queue_depth,
  /// est_serve_queue_refused_total, est_serve_reloads_total, est_serve_model_version (the
  /// newest served), est_serve_model_versions_loaded.
  std::string text(const ModelRegistry& models) const;

 private:
  /// Upper bounds of the latency histogram's buckets, seconds.
  static constexpr std::array<double, 14> kLatencyBounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                           0.1,    0.25,  0.5,    1,     2.5,  5,     10};
  struct Latency {
    std::array<int64_t, kLatencyBounds.size() + 1> buckets{};
    double sum = 0;
    int64_t count = 0;
  };

  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, int64_t> requests_;
  std::map<std::string, Latency> latency_;
};

}  // namespace est::serving
