#include "serving/dynamic_batcher.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <utility>

#include "common/logging.h"
#include "estimator/export/serving_signature.h"

namespace est::serving {
namespace {

using Clock = std::chrono::steady_clock;

// The inputs a batch pads along dimension 1 as Dataset::padded_batch pads VarLen features: an
// input X of shape [-1, -1, ...] beside an int64 input X_length [-1] that says how much of each
// row holds values. None where an output has a free size beyond dimension 0, whose answers could
// depend on the padding.
std::set<std::string> PaddedInputs(const ExportManifest& manifest) {
  std::set<std::string> padded;
  for (const TensorSpec& output : manifest.outputs)
    if (std::any_of(output.shape.begin() + std::min<size_t>(1, output.shape.size()), output.shape.end(),
                    [](int64_t size) { return size < 0; }))
      return padded;
  std::set<std::string> lengths;
  for (const TensorSpec& input : manifest.inputs)
    if (input.dtype == at::kLong && input.shape == std::vector<int64_t>{-1}) lengths.insert(input.name);
  for (const TensorSpec& input : manifest.inputs)
    if (input.shape.size() >= 2 && input.shape[0] < 0 && input.shape[1] < 0 && lengths.count(input.name + "_length"))
      padded.insert(input.name);
  return padded;
}

// What requests that may share a batch have in common: every input's sizes but the first (and
// but the second of a padded input), in the signature's order; requests of an input whose first
// size is fixed batch alone.
std::string ShapeKey(const std::vector<TensorSpec>& inputs, const std::set<std::string>& padded,
                     const Features& request, const void* pending, const Predictor* pinned) {
  std::ostringstream key;
  if (pinned != nullptr) key << "version " << pinned << ';';  // batched only with requests of that version
  for (const TensorSpec& input : inputs) {
    if (input.shape.front() >= 0) {
      key << "alone " << pending;
      return key.str();
    }
    const bool pads = padded.count(input.name) != 0;
    key << input.name << (pads ? " padded:" : ":") << request.at(input.name).sizes().slice(pads ? 2 : 1) << ';';
  }
  return key.str();
}

// The requests' tensors of one input joined along dimension 0; a padded input's padded with zeros
// at the end of dimension 1 to the widest request's.
at::Tensor JoinRequests(const std::vector<at::Tensor>& parts, bool padded) {
  if (!padded) return at::cat(parts, 0);
  int64_t rows = 0;
  int64_t widest = 0;
  for (const at::Tensor& part : parts) {
    rows += part.size(0);
    widest = std::max(widest, part.size(1));
  }
  std::vector<int64_t> shape = parts.front().sizes().vec();
  shape[0] = rows;
  shape[1] = widest;
  at::Tensor joined = at::zeros(shape, parts.front().options());
  int64_t row = 0;
  for (const at::Tensor& part : parts) {
    joined.narrow(0, row, part.size(0)).narrow(1, 0, part.size(1)).copy_(part);
    row += part.size(0);
  }
  return joined;
}

}  // namespace

void BatchingOptions::validate() const {
  EST_CHECK(max_batch_size() >= 1, ConfigError, "max_batch_size must be at least 1, got ", max_batch_size());
  EST_CHECK(max_queue_size() >= 1, ConfigError, "max_queue_size must be at least 1, got ", max_queue_size());
  EST_CHECK(max_queue_delay().count() >= 0, ConfigError, "max_queue_delay must not be negative, got ",
            max_queue_delay().count(), " us");
}

struct DynamicBatcher::Pending {
  Features request;
  int64_t rows = 0;
  std::string shape_key;
  Clock::time_point arrived;
  Clock::time_point deadline;
  /// The version asked for; null: the newest (predictor_).
  std::shared_ptr<const Predictor> pinned;
  /// The predictions, with the version of the Predictor that made them.
  std::promise<std::pair<TensorMap, int64_t>> answer;
};

DynamicBatcher::DynamicBatcher(std::shared_ptr<const Predictor> predictor, BatchingOptions options)
    : options_(std::move(options)), predictor_(std::move(predictor)) {
  options_.validate();
  EST_CHECK(predictor_ != nullptr, ConfigError, "DynamicBatcher: no predictor");
  for (int64_t i = 0; i < predictor_->instances(); ++i) threads_.emplace_back([this] { run(); });
}

DynamicBatcher::~DynamicBatcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  arrived_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void DynamicBatcher::set_predictor(std::shared_ptr<const Predictor> predictor) {
  EST_CHECK(predictor != nullptr, ConfigError, "DynamicBatcher: no predictor");
  std::lock_guard<std::mutex> lock(mutex_);
  predictor_ = std::move(predictor);
}

std::shared_ptr<const Predictor> DynamicBatcher::predictor() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return predictor_;
}

BatchingStats DynamicBatcher::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  BatchingStats stats = stats_;
  stats.queued = static_cast<int64_t>(queue_.size());
  return stats;
}

TensorMap DynamicBatcher::predict(const Features& request, Clock::time_point deadline, int64_t* version,
                                  std::shared_ptr<const Predictor> pinned) {
  const std::shared_ptr<const Predictor> asked = pinned ? pinned : predictor();
  const std::vector<TensorSpec>& inputs = asked->manifest().inputs;
  if (std::string mismatch = RequestMismatch(inputs, request); !mismatch.empty()) throw RequestError(mismatch);
  auto pending = std::make_unique<Pending>();
  Pending* const mine = pending.get();
  pending->request = request;
  pending->rows = request.at(inputs.front().name).size(0);
  pending->arrived = Clock::now();
  pending->deadline = deadline;
  pending->pinned = std::move(pinned);
  std::future<std::pair<TensorMap, int64_t>> answer = pending->answer.get_future();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (static_cast<int64_t>(queue_.size()) >= options_.max_queue_size()) {
      ++stats_.refused;
      EST_THROW(QueueFullError, "the request queue is full (", queue_.size(), " requests wait; max_queue_size ",
                options_.max_queue_size(), "): try again later");
    }
    pending->shape_key = ShapeKey(inputs, PaddedInputs(asked->manifest()), request, mine, pending->pinned.get());
    queue_.push_back(std::move(pending));
  }
  arrived_.notify_all();
  const bool answered =
      deadline == Clock::time_point::max() || answer.wait_until(deadline) == std::future_status::ready;
  if (!answered) {
    // Still queued: it leaves the queue now. Already in a batch: its answer comes.
    std::unique_lock<std::mutex> lock(mutex_);
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
      if (it->get() != mine) continue;
      queue_.erase(it);
      ++stats_.expired;
      ++stats_.requests;
      lock.unlock();
      EST_THROW(TimeoutError, "the request's deadline passed while it waited for a batch");
    }
  }
  auto [predictions, answered_by] = answer.get();
  if (version != nullptr) *version = answered_by;
  return std::move(predictions);
}

void DynamicBatcher::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  Clock::time_point free_since;  // when this thread's last batch ended
  while (true) {
    // One thread at a time forms a batch; the others run theirs or wait their turn.
    arrived_.wait(lock, [&] { return stopping_ || (!forming_ && !queue_.empty()); });
    if (stopping_) break;
    forming_ = true;
    // The first request opens a batch; those of its shape join until it is full or the first
    // has waited max_queue_delay (or until its deadline), counted from when this thread was
    // free for it: a request that came while every thread ran a batch waits from the end of
    // this thread's, so that the answered callers' next requests join it instead of forming a
    // batch of their own.
    const std::string key = queue_.front()->shape_key;
    const Clock::time_point window_end =
        std::min(std::max(queue_.front()->arrived, free_since) + options_.max_queue_delay(), queue_.front()->deadline);
    auto full = [&] {
      int64_t rows = 0;
      for (const auto& pending : queue_)
        if (pending->shape_key == key) rows += pending->rows;
      return rows >= options_.max_batch_size();
    };
    arrived_.wait_until(lock, window_end, [&] { return stopping_ || queue_.empty() || full(); });
    if (stopping_) break;
    std::vector<std::unique_ptr<Pending>> batch;
    int64_t rows = 0;
    const Clock::time_point now = Clock::now();
    for (auto it = queue_.begin(); it != queue_.end();) {
      Pending& pending = **it;
      if (pending.deadline <= now) {
        pending.answer.set_exception(std::make_exception_ptr(
            TimeoutError("the request's deadline passed while it waited for a batch")));
        ++stats_.expired;
        ++stats_.requests;
        it = queue_.erase(it);
        continue;
      }
      if (pending.shape_key != key || (!batch.empty() && rows + pending.rows > options_.max_batch_size())) {
        ++it;
        continue;
      }
      rows += pending.rows;
      batch.push_back(std::move(*it));
      it = queue_.erase(it);
    }
    forming_ = false;
    arrived_.notify_all();  // the next thread may form a batch
    if (batch.empty()) continue;
    std::shared_ptr<const Predictor> predictor = batch.front()->pinned ? batch.front()->pinned : predictor_;
    ++stats_.batches;
    stats_.requests += static_cast<int64_t>(batch.size());
    stats_.examples += rows;
    ++stats_.batch_sizes[static_cast<size_t>(std::lower_bound(std::begin(kBatchSizeBounds), std::end(kBatchSizeBounds),
                                                              rows) - std::begin(kBatchSizeBounds))];
    lock.unlock();
    run_batch(batch, std::move(predictor));
    free_since = Clock::now();
    lock.lock();
  }
  for (auto& pending : queue_)
    pending->answer.set_exception(
        std::make_exception_ptr(CommunicationError("the server stopped before the request's batch ran")));
  queue_.clear();
}

void DynamicBatcher::run_batch(std::vector<std::unique_ptr<Pending>>& batch,
                               std::shared_ptr<const Predictor> predictor) {
  // The version is let go before the answers go out: one no longer served is freed by its last
  // request, before that request's caller hears back.
  auto let_go = [&] {
    predictor.reset();
    for (const auto& pending : batch) pending->pinned.reset();
  };
  TensorMap outputs;
  int64_t rows = 0;
  try {
    Features inputs;
    if (batch.size() == 1) {
      inputs = batch.front()->request;
    } else {
      const std::set<std::string> padded = PaddedInputs(predictor->manifest());
      for (const auto& [name, first] : batch.front()->request) {
        std::vector<at::Tensor> parts;
        for (const auto& pending : batch) parts.push_back(pending->request.at(name));
        inputs[name] = JoinRequests(parts, padded.count(name) != 0);
      }
    }
    for (const auto& pending : batch) rows += pending->rows;
    outputs = predictor->predict(inputs);
  } catch (...) {
    let_go();
    for (const auto& pending : batch) pending->answer.set_exception(std::current_exception());
    return;
  }
  const int64_t version = predictor->version();
  let_go();
  // Each request's rows of every output with one row per example; other outputs whole.
  int64_t offset = 0;
  for (const auto& pending : batch) {
    TensorMap mine;
    for (const auto& [name, tensor] : outputs)
      mine[name] = batch.size() > 1 && tensor.dim() > 0 && tensor.size(0) == rows
                       ? tensor.narrow(0, offset, pending->rows).clone()
                       : tensor;
    offset += pending->rows;
    pending->answer.set_value({std::move(mine), version});
  }
}

}  // namespace est::serving
