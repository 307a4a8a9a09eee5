// Dataset::prefetch: a background thread reads ahead into a bounded queue.

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#include "common/error.h"
#include "data/dataset.h"
#include "data/dataset_node.h"

namespace est::data {
namespace {

/// Owns a producer thread that moves the input's elements into a queue of at most
/// `capacity` elements; next() takes them out. The first next() starts the thread, and
/// the destructor stops and joins it.
class PrefetchIterator : public Iterator {
 public:
  PrefetchIterator(std::unique_ptr<Iterator> input, size_t capacity)
      : input_(std::move(input)), capacity_(capacity) {}

  ~PrefetchIterator() override {
    if (!producer_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    producer_.join();
  }

  PrefetchIterator(const PrefetchIterator&) = delete;
  PrefetchIterator& operator=(const PrefetchIterator&) = delete;

  std::optional<Element> next() override {
    if (!producer_.joinable() && !input_ended_) producer_ = std::thread([this] { produce(); });
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return !queue_.empty() || input_ended_; });
    if (queue_.empty()) {
      if (error_) std::rethrow_exception(error_);
      return std::nullopt;
    }
    Element element = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    changed_.notify_all();
    return element;
  }

  /// Before the first next(), skips on the input directly (nothing was read ahead yet);
  /// afterwards takes the elements from the queue.
  int64_t skip(int64_t count) override {
    if (producer_.joinable()) return Iterator::skip(count);
    if (!input_) return 0;
    const int64_t skipped = input_->skip(count);
    if (skipped < count) {
      input_.reset();
      input_ended_ = true;
    }
    return skipped;
  }

 private:
  /// The producer thread: runs until the input ends, fails, or the iterator is destroyed.
  void produce() {
    try {
      while (wait_for_room()) {
        auto element = input_->next();
        std::lock_guard<std::mutex> lock(mutex_);
        if (!element) {
          input_ended_ = true;
        } else {
          queue_.push_back(std::move(*element));
        }
        changed_.notify_all();
        if (input_ended_) break;
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::current_exception();
      input_ended_ = true;
      changed_.notify_all();
    }
    input_.reset();  // on this thread, as the input may own threads or files of its own
  }

  /// Waits until the queue has room; false when the iterator is being destroyed.
  bool wait_for_room() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return stopping_ || queue_.size() < capacity_; });
    return !stopping_;
  }

  std::unique_ptr<Iterator> input_;  ///< used by the producer thread only
  const size_t capacity_;
  std::mutex mutex_;
  std::condition_variable changed_;  ///< queue, input_ended_ or stopping_ changed
  std::deque<Element> queue_;
  bool input_ended_ = false;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::thread producer_;
};

class PrefetchNode : public DatasetNode {
 public:
  PrefetchNode(std::shared_ptr<const DatasetNode> input, int64_t buffer_size)
      : input_(std::move(input)), buffer_size_(static_cast<size_t>(buffer_size)) {}

  std::shared_ptr<const DatasetNode> input() const override { return input_; }

  std::shared_ptr<const DatasetNode> on_input(std::shared_ptr<const DatasetNode> input) const override {
    return std::make_shared<PrefetchNode>(std::move(input), static_cast<int64_t>(buffer_size_));
  }

  std::unique_ptr<Iterator> make_iterator() const override {
    return std::make_unique<PrefetchIterator>(input_->make_iterator(), buffer_size_);
  }

  int64_t cardinality() const override { return input_->cardinality(); }

 private:
  std::shared_ptr<const DatasetNode> input_;
  size_t buffer_size_;
};

}  // namespace

Dataset Dataset::prefetch(int64_t buffer_size) const {
  EST_CHECK(buffer_size >= 1, DataError, "Dataset::prefetch: buffer_size is ", buffer_size,
            ", expected at least 1");
  return Dataset(std::make_shared<PrefetchNode>(node_, buffer_size));
}

}  // namespace est::data
