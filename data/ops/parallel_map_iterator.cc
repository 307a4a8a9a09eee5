#include "data/ops/parallel_map_iterator.h"

#include <algorithm>
#include <utility>

namespace est::data {

ParallelMapIterator::ParallelMapIterator(std::unique_ptr<Iterator> input,
                                         std::shared_ptr<const MapFunction> fn,
                                         size_t num_workers, size_t max_in_flight)
    : fn_(std::move(fn)),
      num_workers_(num_workers),
      slots_(max_in_flight),
      input_(std::move(input)) {
  workers_.reserve(num_workers);
  try {
    for (size_t i = 0; i < num_workers; ++i) workers_.emplace_back([this] { work(); });
  } catch (...) {
    stop();
    throw;
  }
}

ParallelMapIterator::~ParallelMapIterator() { stop(); }

void ParallelMapIterator::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_published_.notify_all();
  for (auto& worker : workers_) worker.join();
  workers_.clear();
}

std::optional<Element> ParallelMapIterator::next() {
  if (read_ - consumed_ <= slots_.size() / 2) fill();
  if (read_ == consumed_) {
    if (input_error_) std::rethrow_exception(input_error_);
    return std::nullopt;
  }
  Slot& slot = slots_[consumed_ % slots_.size()];
  {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!slot.done) {
      if (claimed_ < published_) {  // help rather than sleep: a run of its own
        const Run run = claim(num_workers_ + 1);
        lock.unlock();
        const at::ThreadLocalStateGuard state_guard(state_);
        const uint64_t end = call(run);
        lock.lock();
        finish(run.begin, end);
      } else {
        awaited_ = consumed_;
        consumer_waiting_ = true;
        work_done_.wait(lock, [&slot] { return slot.done; });
        consumer_waiting_ = false;
      }
    }
    slot.done = false;
  }
  ++consumed_;
  std::optional<Element> output = std::move(slot.output);
  slot.output.reset();
  if (slot.error) std::rethrow_exception(std::exchange(slot.error, nullptr));
  return output;
}

int64_t ParallelMapIterator::skip(int64_t count) {
  int64_t skipped = 0;
  for (; skipped < count && read_ > consumed_; ++skipped) {
    try {
      next();
    } catch (...) {  // NOLINT(bugprone-empty-catch): a skipped element's error goes with it
    }
  }
  if (skipped == count) return skipped;
  if (!input_) {
    if (input_error_) std::rethrow_exception(input_error_);
    return skipped;
  }
  const int64_t from_input = input_->skip(count - skipped);
  if (from_input < count - skipped) input_.reset();
  return skipped + from_input;
}

void ParallelMapIterator::fill() {
  const uint64_t first = read_;
  while (input_ && read_ - consumed_ < slots_.size()) {
    std::optional<Element> element;
    try {
      element = input_->next();
    } catch (...) {
      input_error_ = std::current_exception();
    }
    if (!element) {
      input_.reset();
      break;
    }
    slots_[read_ % slots_.size()].input = std::move(*element);
    ++read_;
  }
  if (read_ == first) return;
  size_t to_wake = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    published_ = read_;
    to_wake = static_cast<size_t>(std::min<uint64_t>(idle_workers_, read_ - first));
  }
  for (size_t i = 0; i < to_wake; ++i) work_published_.notify_one();
}

ParallelMapIterator::Run ParallelMapIterator::claim(size_t sharers) {
  const uint64_t begin = claimed_;
  claimed_ += std::max<uint64_t>(1, (published_ - claimed_) / sharers);
  return Run{begin, claimed_};
}

uint64_t ParallelMapIterator::call(Run run) {
  uint64_t n = run.begin;
  for (; n < run.end && !stopping_; ++n) {
    Slot& slot = slots_[n % slots_.size()];
    try {
      slot.output = (*fn_)(std::move(slot.input));
    } catch (...) {
      slot.error = std::current_exception();
    }
  }
  return n;
}

void ParallelMapIterator::finish(uint64_t begin, uint64_t end) {
  for (uint64_t n = begin; n < end; ++n) slots_[n % slots_.size()].done = true;
  if (consumer_waiting_ && begin <= awaited_ && awaited_ < end) work_done_.notify_one();
}

void ParallelMapIterator::work() {
  const at::ThreadLocalStateGuard state_guard(state_);
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (!stopping_ && claimed_ == published_) {
      ++idle_workers_;
      work_published_.wait(lock, [this] { return stopping_ || claimed_ < published_; });
      --idle_workers_;
    }
    if (stopping_) return;
    const Run run = claim(num_workers_);
    lock.unlock();
    const uint64_t end = call(run);
    lock.lock();
    finish(run.begin, end);
  }
}

}  // namespace est::data
