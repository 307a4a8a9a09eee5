#include "data/ops/read_ahead_pool.h"

#include <algorithm>
#include <utility>

namespace est::data {

/// The state of one iterator read ahead, guarded by its pool's mutex.
struct ReadAheadIterator::Stream {
  std::unique_ptr<Iterator> input;
  std::deque<Element> ready;
  std::exception_ptr error;
  bool ended = false;    ///< the input returned its end (or threw)
  bool started = false;  ///< the consumer called next(): the threads may read
  bool busy = false;     ///< a thread (or the consumer, skipping) is inside the input
  bool waited_for = false;  ///< the consumer waits on it: the threads wake it when they change it
};

ReadAheadIterator::ReadAheadIterator(ReadAheadPool* pool, std::shared_ptr<Stream> stream)
    : pool_(pool), stream_(std::move(stream)) {}

ReadAheadIterator::~ReadAheadIterator() {
  std::unique_lock<std::mutex> lock(pool_->mutex_);
  stream_->ended = true;  // no thread starts on it again
  stream_->waited_for = true;
  pool_->progress_.wait(lock, [&] { return !stream_->busy; });
  pool_->streams_.remove(stream_);
}

bool ReadAheadIterator::ready() const {
  std::lock_guard<std::mutex> lock(pool_->mutex_);
  return !stream_->ready.empty() || stream_->error || stream_->ended;
}

std::optional<Element> ReadAheadIterator::next() {
  std::unique_lock<std::mutex> lock(pool_->mutex_);
  Stream& stream = *stream_;
  stream.started = true;  // from now on the threads read it
  if (stream.ready.empty() && !stream.error && !stream.ended) {
    // A thread may sleep while this stream has room (it has just started, or skip() took what
    // was read ahead without waking one): wake one before waiting on it.
    stream.waited_for = true;
    pool_->work_available_.notify_one();
    pool_->progress_.wait(lock, [&] { return !stream.ready.empty() || stream.error || stream.ended; });
    stream.waited_for = false;
  }
  if (!stream.ready.empty()) {
    Element element = std::move(stream.ready.front());
    stream.ready.pop_front();
    // Room for a whole block again: the stream has just become readable.
    if (stream.ready.size() + pool_->block_ == pool_->capacity_) pool_->work_available_.notify_one();
    return element;
  }
  if (stream.error) {
    std::exception_ptr error = std::exchange(stream.error, nullptr);
    stream.ended = true;
    std::rethrow_exception(error);
  }
  return std::nullopt;
}

int64_t ReadAheadIterator::skip(int64_t count) {
  std::unique_lock<std::mutex> lock(pool_->mutex_);
  Stream& stream = *stream_;
  int64_t skipped = 0;
  while (true) {
    for (; skipped < count && !stream.ready.empty(); ++skipped) stream.ready.pop_front();
    if (skipped == count) return skipped;
    stream.waited_for = true;
    pool_->progress_.wait(lock, [&] { return !stream.busy; });
    stream.waited_for = false;
    if (stream.ready.empty()) break;  // else a thread read more while we waited
  }
  if (stream.error) {
    std::exception_ptr error = std::exchange(stream.error, nullptr);
    stream.ended = true;
    std::rethrow_exception(error);
  }
  if (stream.ended) return skipped;
  stream.busy = true;  // keeps the threads out while this thread moves the input
  lock.unlock();
  int64_t moved = 0;
  std::exception_ptr error;
  try {
    moved = stream.input->skip(count - skipped);
  } catch (...) {
    error = std::current_exception();
  }
  lock.lock();
  stream.busy = false;
  if (error || moved < count - skipped) stream.ended = true;
  pool_->progress_.notify_all();
  pool_->work_available_.notify_one();
  if (error) std::rethrow_exception(error);
  return skipped + moved;
}

ReadAheadPool::ReadAheadPool(size_t num_threads, size_t capacity)
    : capacity_(std::max<size_t>(capacity, 1)), block_(std::max<size_t>(capacity_ / 2, 1)) {
  threads_.reserve(num_threads);
  for (size_t i = 0; i < num_threads; ++i) threads_.emplace_back([this] { work(); });
}

ReadAheadPool::~ReadAheadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_available_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

std::unique_ptr<ReadAheadIterator> ReadAheadPool::read_ahead(std::unique_ptr<Iterator> input) {
  auto stream = std::make_shared<Stream>();
  stream->input = std::move(input);
  std::lock_guard<std::mutex> lock(mutex_);
  streams_.push_back(stream);
  return std::unique_ptr<ReadAheadIterator>(new ReadAheadIterator(this, std::move(stream)));
}

std::shared_ptr<ReadAheadPool::Stream> ReadAheadPool::pick() const {
  std::shared_ptr<Stream> chosen;
  for (const auto& stream : streams_) {
    const bool readable = stream->started && !stream->busy && !stream->ended && !stream->error &&
                          stream->ready.size() + block_ <= capacity_;
    if (!readable) continue;
    if (stream->waited_for) return stream;
    if (!chosen) chosen = stream;
  }
  return chosen;
}

void ReadAheadPool::work() {
  const at::ThreadLocalStateGuard state_guard(state_);
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    std::shared_ptr<Stream> stream;
    work_available_.wait(lock, [&] { return stopping_ || (stream = pick()) != nullptr; });
    if (stopping_) return;
    stream->busy = true;
    lock.unlock();
    // A block of elements per hand-off: the lock and the wake-ups are paid once for all of them.
    std::vector<Element> block;
    block.reserve(block_);
    bool ended = false;
    std::exception_ptr error;
    try {
      while (block.size() < block_) {
        std::optional<Element> element = stream->input->next();
        if (!element) {
          ended = true;
          break;
        }
        block.push_back(std::move(*element));
      }
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    stream->busy = false;
    for (Element& element : block) stream->ready.push_back(std::move(element));
    if (error) {
      stream->error = error;
    } else if (ended) {
      stream->ended = true;
    }
    if (stream->waited_for) progress_.notify_all();
    if (pick() != nullptr) work_available_.notify_one();
  }
}

}  // namespace est::data
