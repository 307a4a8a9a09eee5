#pragma once
/// Internal: threads that read several iterators ahead of their consumer, for
/// Dataset::InterleaveFiles with num_parallel_calls above 1.

#include <ATen/ThreadLocalState.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "data/iterator.h"

namespace est::data {

class ReadAheadPool;

/// An iterator whose elements a ReadAheadPool's threads read ahead of it, at most the
/// pool's capacity. Reading starts at the first next(); a skip() before that moves the input
/// directly. The input's exception is thrown by the next() that reaches it, after which the
/// iterator has ended. Used by one consumer thread; destroy it before its pool.
class ReadAheadIterator : public Iterator {
 public:
  ~ReadAheadIterator() override;
  ReadAheadIterator(const ReadAheadIterator&) = delete;
  ReadAheadIterator& operator=(const ReadAheadIterator&) = delete;

  std::optional<Element> next() override;
  /// Takes the elements read ahead, then skips on the input on this thread.
  int64_t skip(int64_t count) override;
  /// Whether next() would return at once: an element, the end or an error is ready.
  bool ready() const;

 private:
  friend class ReadAheadPool;
  struct Stream;
  ReadAheadIterator(ReadAheadPool* pool, std::shared_ptr<Stream> stream);

  ReadAheadPool* pool_;
  std::shared_ptr<Stream> stream_;
};

/// `num_threads` threads filling the queues of the iterators made by read_ahead(), the one
/// their consumer waits for first, a block of half the capacity at a time (one lock and one
/// wake-up for the whole block). The threads run with the thread-local LibTorch state of
/// the thread that made the pool. Destroying the pool joins them.
class ReadAheadPool {
 public:
  ReadAheadPool(size_t num_threads, size_t capacity);
  ~ReadAheadPool();
  ReadAheadPool(const ReadAheadPool&) = delete;
  ReadAheadPool& operator=(const ReadAheadPool&) = delete;

  /// `input` read ahead by the pool's threads.
  std::unique_ptr<ReadAheadIterator> read_ahead(std::unique_ptr<Iterator> input);

 private:
  friend class ReadAheadIterator;
  using Stream = ReadAheadIterator::Stream;

  /// A stream a thread may read from now, the waited-for first; nullptr if none. Needs mutex_.
  std::shared_ptr<Stream> pick() const;
  /// A pool thread.
  void work();

  const size_t capacity_;
  const size_t block_;  ///< elements a thread reads per hand-off: half the capacity
  const at::ThreadLocalState state_;
  mutable std::mutex mutex_;
  std::condition_variable work_available_;  ///< a stream may be read: for the threads
  std::condition_variable progress_;        ///< a stream got an element, its end or an error
  std::list<std::shared_ptr<Stream>> streams_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace est::data
