#pragma once
/// Internal: the iterator of Dataset::map with more than one parallel call.

#include <ATen/ThreadLocalState.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "data/iterator.h"

namespace est::data {

/// The function of a map, shared by its node and its iterators.
using MapFunction = std::function<Element(Element)>;

/// Calls a map function on worker threads and yields the results in input order.
///
/// next() reads the input on the calling thread into a ring of `max_in_flight` slots
/// (refilling it once it is half empty), and then waits for the oldest slot, calling the
/// function itself on elements no worker has taken rather than sleeping (so that a map
/// whose workers wait for a busy core still makes progress). Workers take runs of
/// consecutive slots, so that a cheap function costs one hand-off per run rather than
/// per element. An exception from the function is rethrown by the next() that would
/// have returned its element; one from the input is rethrown after the elements read
/// before it, and by every later call. Every call runs with the thread-local LibTorch
/// state (grad mode and the like) of the thread that made the iterator. Destroying the
/// iterator joins the workers once their current calls return.
class ParallelMapIterator : public Iterator {
 public:
  /// Starts `num_workers` threads that call `fn`; needs max_in_flight >= num_workers >= 1.
  ParallelMapIterator(std::unique_ptr<Iterator> input, std::shared_ptr<const MapFunction> fn,
                      size_t num_workers, size_t max_in_flight);
  ~ParallelMapIterator() override;

  ParallelMapIterator(const ParallelMapIterator&) = delete;
  ParallelMapIterator& operator=(const ParallelMapIterator&) = delete;

  std::optional<Element> next() override;
  /// Takes the elements already read through the function (an error of theirs is
  /// dropped with them), then skips on the input without calling the function.
  int64_t skip(int64_t count) override;

 private:
  /// One input element on its way through a worker; element n lives in slots_[n % size].
  struct Slot {
    Element input;
    std::optional<Element> output;
    std::exception_ptr error;
    bool done = false;  ///< guarded by mutex_; output and error are final once it is set
  };

  /// Elements [begin, end), taken by one thread.
  struct Run {
    uint64_t begin;
    uint64_t end;
  };

  /// Reads the input until the ring is full or the input ends, and publishes what it read.
  void fill();
  /// Takes the next run of published elements: a 1/`sharers` share, at least one. Needs
  /// mutex_ held and an unclaimed published element.
  Run claim(size_t sharers);
  /// Calls the function on the run's elements until its end or stopping_; returns the
  /// end reached. Without mutex_.
  uint64_t call(Run run);
  /// Marks [begin, end) done and wakes next() if it waits for one of them; needs mutex_.
  void finish(uint64_t begin, uint64_t end);
  /// A worker thread: calls the function on runs of published elements until stopping_.
  void work();
  /// Stops and joins the workers.
  void stop();

  std::shared_ptr<const MapFunction> fn_;
  const at::ThreadLocalState state_;  ///< of the thread that made the iterator
  const size_t num_workers_;
  std::vector<Slot> slots_;

  // Used by the consumer thread only.
  std::unique_ptr<Iterator> input_;  ///< reset at the end of the input or at its error
  std::exception_ptr input_error_;
  uint64_t read_ = 0;      ///< elements read from the input
  uint64_t consumed_ = 0;  ///< elements returned (or thrown) by next()

  std::mutex mutex_;
  std::condition_variable work_published_;  ///< published_ grew or stopping_ was set
  std::condition_variable work_done_;       ///< the slot next() waits for is done
  uint64_t published_ = 0;                  ///< elements handed to the workers
  uint64_t claimed_ = 0;                    ///< elements taken by a worker
  size_t idle_workers_ = 0;                 ///< workers waiting on work_published_
  bool consumer_waiting_ = false;           ///< next() waits for element awaited_
  uint64_t awaited_ = 0;
  std::atomic<bool> stopping_{false};       ///< set under mutex_; read by workers mid-run
  std::vector<std::thread> workers_;
};

}  // namespace est::data
