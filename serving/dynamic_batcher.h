#pragma once
/// DynamicBatcher: concurrent requests to one model, batched along dimension 0 (TF Serving's
/// batching, Triton's dynamic batching): a request waits at most max_queue_delay for others,
/// a batch holds at most max_batch_size examples, and each caller gets its own rows of the
/// predictions back. The queue is bounded, and each request's deadline is kept. Requests whose
/// sizes beyond dimension 0 differ batch apart, except a padded VarLen input (X [-1, -1, ...]
/// beside X_length [-1], as ParsingServingInputFn and padded_batch give them): requests of
/// different widths share a batch, padded with zeros to the widest, where every output's size
/// beyond dimension 0 is fixed.

#include <torch/arg.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <iterator>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/error.h"
#include "serving/predictor.h"

namespace est::serving {

/// How requests are batched.
struct BatchingOptions {
  /// ConfigError naming a value that is not positive (a delay may be 0).
  void validate() const;

  /// The most examples (rows along dimension 0) in one batch; a larger request runs alone.
  TORCH_ARG(int64_t, max_batch_size) = 64;
  /// How long the first request of a batch waits for more.
  TORCH_ARG(std::chrono::microseconds, max_queue_delay) = std::chrono::microseconds(2000);
  /// The most requests waiting; one more is refused with a QueueFullError.
  TORCH_ARG(int64_t, max_queue_size) = 1024;
};

/// A request refused because the queue is full (gRPC's RESOURCE_EXHAUSTED).
class QueueFullError : public Error {
 public:
  using Error::Error;
};

/// What a batcher has done.
/// Upper bounds of the buckets of BatchingStats::batch_sizes (examples in one model call).
inline constexpr int64_t kBatchSizeBounds[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};

struct BatchingStats {
  int64_t requests = 0;  ///< answered, successfully or not
  int64_t batches = 0;   ///< model calls
  int64_t examples = 0;  ///< examples in those calls
  /// Batches by their examples: [i] counts those above kBatchSizeBounds[i - 1] and at most
  /// kBatchSizeBounds[i]; the last, those above every bound.
  std::array<int64_t, std::size(kBatchSizeBounds) + 1> batch_sizes{};
  int64_t refused = 0;   ///< refused: queue full
  int64_t expired = 0;   ///< deadline passed before their batch ran
  int64_t queued = 0;    ///< waiting now
};

/// Batches the requests of many threads to a model's versions. It runs as many batches at once as the
/// first Predictor has instances, each on a thread of its own: while one computes, the next
/// forms and starts on a free instance instead of waiting for it.
class DynamicBatcher {
 public:
  DynamicBatcher(std::shared_ptr<const Predictor> predictor, BatchingOptions options);
  /// Waits for the batches that run; requests still queued get a CommunicationError.
  ~DynamicBatcher();
  DynamicBatcher(const DynamicBatcher&) = delete;
  DynamicBatcher& operator=(const DynamicBatcher&) = delete;

  /// The predictions for `request`, computed in a batch with others. RequestError (at once)
  /// for a request that does not fit the model's signature, QueueFullError when the queue is
  /// full, TimeoutError when `deadline` passes before its batch runs; the model's own errors
  /// reach every request of the batch. `version`, when given, is set to the version of the
  /// Predictor that answered: `pinned` where given (a version asked for by number, batched only
  /// with requests of it), else the Predictor of set_predictor (the newest).
  TensorMap predict(const Features& request,
                    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max(),
                    int64_t* version = nullptr, std::shared_ptr<const Predictor> pinned = nullptr);

  /// Makes the batches formed from now on use `predictor` (a new version); a batch running
  /// keeps the one it started with.
  void set_predictor(std::shared_ptr<const Predictor> predictor);
  /// The model batches use now.
  std::shared_ptr<const Predictor> predictor() const;

  BatchingStats stats() const;

 private:
  struct Pending;
  void run();
  void run_batch(std::vector<std::unique_ptr<Pending>>& batch, std::shared_ptr<const Predictor> predictor);

  const BatchingOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::deque<std::unique_ptr<Pending>> queue_;
  std::shared_ptr<const Predictor> predictor_;
  BatchingStats stats_;
  bool stopping_ = false;
  bool forming_ = false;  ///< a thread is forming a batch; the others wait their turn
  std::vector<std::thread> threads_;
};

}  // namespace est::serving
