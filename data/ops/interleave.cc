// Dataset::InterleaveFiles: the datasets of several files read in turn, as tf.data's
// interleave over a list of files, optionally read ahead by threads.

#include <algorithm>
#include <thread>
#include <utility>

#include "common/error.h"
#include "data/dataset.h"
#include "data/dataset_node.h"
#include "data/ops/autotune.h"
#include "data/ops/read_ahead_pool.h"

namespace est::data {
namespace {

using FileDatasetFunction = std::function<Dataset(const std::string& file)>;

/// Elements a thread reads ahead of the consumer in each open file, in blocks.
constexpr int64_t kBlocksReadAhead = 4;
/// ... and at least this many, so that small blocks still batch the hand-offs.
constexpr int64_t kMinReadAhead = 16;

/// kAutotune as a number of files open at once: one per hardware thread.
size_t ResolveCycleLength(int64_t value) {
  if (value != kAutotune) return static_cast<size_t>(value);
  return std::max<size_t>(1, std::thread::hardware_concurrency());
}

class InterleaveNode : public DatasetNode {
 public:
  InterleaveNode(std::vector<std::string> files, std::shared_ptr<const FileDatasetFunction> fn,
                 InterleaveOptions options)
      : files_(std::move(files)), fn_(std::move(fn)), options_(options) {}

  std::unique_ptr<Iterator> make_iterator() const override {
    return std::make_unique<InterleaveIterator>(self<InterleaveNode>());
  }

  int64_t cardinality() const override { return kUnknownCardinality; }

  const std::vector<std::string>* files() const override { return &files_; }

  std::shared_ptr<const DatasetNode> with_files(std::vector<std::string> files) const override {
    return std::make_shared<InterleaveNode>(std::move(files), fn_, options_);
  }

 private:
  /// tf.data's interleave order: visiting slot `cycle_index_`, take `block_length` elements
  /// of its file, then move to the next slot; an empty slot opens the next file; a file that
  /// ends empties its slot and moves on.
  class InterleaveIterator : public Iterator {
   public:
    explicit InterleaveIterator(std::shared_ptr<const InterleaveNode> node)
        : node_(std::move(node)),
          block_length_(node_->options_.block_length()),
          deterministic_(node_->options_.deterministic()) {
      const size_t files = node_->files_.size();
      const size_t cycle_length =
          std::max<size_t>(1, std::min(ResolveCycleLength(node_->options_.cycle_length()), files));
      slots_.resize(cycle_length);
      const size_t threads = std::min(ResolveThreads(node_->options_.num_parallel_calls()), cycle_length);
      if (threads > 1) {
        const auto read_ahead = std::max(kMinReadAhead, kBlocksReadAhead * block_length_);
        pool_ = std::make_unique<ReadAheadPool>(threads, static_cast<size_t>(read_ahead));
      }
    }

    ~InterleaveIterator() override { slots_.clear(); }  // before the pool they belong to

    std::optional<Element> next() override {
      while (more()) {
        if (!slots_[cycle_index_]) {
          open_or_move_on();
          continue;
        }
        if (!deterministic_) take_ready_slot();
        std::optional<Element> element = guarded([&] { return slots_[cycle_index_]->next(); });
        if (element) {
          advance(1);
          return element;
        }
        close_slot();
      }
      return std::nullopt;
    }

    int64_t skip(int64_t count) override {
      int64_t skipped = 0;
      while (skipped < count && more()) {
        if (!slots_[cycle_index_]) {
          open_or_move_on();
          continue;
        }
        const int64_t wanted = std::min(count - skipped, block_length_ - block_index_);
        const int64_t moved = guarded([&] { return slots_[cycle_index_]->skip(wanted); });
        skipped += moved;
        if (moved == wanted) {
          advance(moved);
        } else {
          close_slot();
        }
      }
      return skipped;
    }

   private:
    bool more() const { return next_file_ < node_->files_.size() || open_ > 0; }

    /// Opens the next file into the empty current slot, or moves on when none is left.
    void open_or_move_on() {
      if (next_file_ == node_->files_.size()) {
        move_to_next_slot();
        return;
      }
      auto iterator = (*node_->fn_)(node_->files_[next_file_++]).make_iterator();
      if (pool_) {
        slots_[cycle_index_] = pool_->read_ahead(std::move(iterator));
      } else {
        slots_[cycle_index_] = std::move(iterator);
      }
      ++open_;
    }

    /// Calls `read` on the current slot; a file that throws is closed before the exception
    /// goes on, so the next call continues with the other files.
    template <typename Read>
    auto guarded(Read read) -> decltype(read()) {
      try {
        return read();
      } catch (...) {
        close_slot();
        throw;
      }
    }

    /// Without determinism: when the current slot has nothing read yet, moves to one that has.
    void take_ready_slot() {
      auto ready = [&](size_t slot) {
        return slots_[slot] && static_cast<const ReadAheadIterator&>(*slots_[slot]).ready();
      };
      if (!pool_ || ready(cycle_index_)) return;
      for (size_t step = 1; step < slots_.size(); ++step) {
        const size_t slot = (cycle_index_ + step) % slots_.size();
        if (ready(slot)) {
          cycle_index_ = slot;
          block_index_ = 0;
          return;
        }
      }
    }

    void close_slot() {
      slots_[cycle_index_].reset();
      --open_;
      move_to_next_slot();
    }

    /// Counts `taken` elements of the current block, moving on at its end.
    void advance(int64_t taken) {
      block_index_ += taken;
      if (block_index_ == block_length_) move_to_next_slot();
    }

    void move_to_next_slot() {
      block_index_ = 0;
      cycle_index_ = (cycle_index_ + 1) % slots_.size();
    }

    std::shared_ptr<const InterleaveNode> node_;
    const int64_t block_length_;
    const bool deterministic_;
    std::unique_ptr<ReadAheadPool> pool_;
    std::vector<std::unique_ptr<Iterator>> slots_;  ///< ReadAheadIterators when pool_ is set
    size_t cycle_index_ = 0;
    int64_t block_index_ = 0;
    size_t next_file_ = 0;
    size_t open_ = 0;
  };

  std::vector<std::string> files_;
  std::shared_ptr<const FileDatasetFunction> fn_;
  InterleaveOptions options_;
};

/// Checks that `value` is at least 1 or kAutotune.
void CheckCount(int64_t value, const char* name) {
  EST_CHECK(value >= 1 || value == kAutotune, DataError, "Dataset::InterleaveFiles: ", name, " is ", value,
            ", expected at least 1 or kAutotune");
}

}  // namespace

Dataset Dataset::InterleaveFiles(std::vector<std::string> files, FileDatasetFunction fn, InterleaveOptions options) {
  EST_CHECK(fn != nullptr, DataError, "Dataset::InterleaveFiles: the function is empty");
  CheckCount(options.cycle_length(), "cycle_length");
  CheckCount(options.num_parallel_calls(), "num_parallel_calls");
  EST_CHECK(options.block_length() >= 1, DataError, "Dataset::InterleaveFiles: block_length is ",
            options.block_length(), ", expected at least 1");
  return Dataset(std::make_shared<InterleaveNode>(
      std::move(files), std::make_shared<const FileDatasetFunction>(std::move(fn)), options));
}

}  // namespace est::data
