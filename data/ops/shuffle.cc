// Dataset::shuffle: tf.data's buffered shuffle with reproducible seeds.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "common/error.h"
#include "data/dataset.h"
#include "data/dataset_node.h"

namespace est::data {
namespace {

/// SplitMix64's finaliser: spreads (seed, iteration) pairs into unrelated engine seeds.
uint64_t Mix(uint64_t value) {
  value += 0x9E3779B97F4A7C15ULL;
  value = (value ^ (value >> 30)) * 0xBF58476D1CE4E5B9ULL;
  value = (value ^ (value >> 27)) * 0x94D049BB133111EBULL;
  return value ^ (value >> 31);
}

class ShuffleNode : public DatasetNode {
 public:
  ShuffleNode(std::shared_ptr<const DatasetNode> input, int64_t buffer_size, uint64_t seed,
              bool reshuffle_each_iteration)
      : input_(std::move(input)),
        buffer_size_(static_cast<size_t>(buffer_size)),
        seed_(seed),
        reshuffle_each_iteration_(reshuffle_each_iteration) {}

  std::shared_ptr<const DatasetNode> input() const override { return input_; }

  std::shared_ptr<const DatasetNode> on_input(std::shared_ptr<const DatasetNode> input) const override {
    return std::make_shared<ShuffleNode>(std::move(input), static_cast<int64_t>(buffer_size_), seed_, reshuffle_each_iteration_);
  }

  std::unique_ptr<Iterator> make_iterator() const override {
    const uint64_t iteration = reshuffle_each_iteration_ ? iterations_made_.fetch_add(1) : 0;
    return std::make_unique<ShuffleIterator>(input_->make_iterator(), input_->cardinality(), buffer_size_,
                                             Mix(seed_ ^ Mix(iteration)));
  }

  int64_t cardinality() const override { return input_->cardinality(); }

 private:
  class ShuffleIterator : public Iterator {
   public:
    ShuffleIterator(std::unique_ptr<Iterator> input, int64_t input_cardinality, size_t buffer_size, uint64_t seed)
        : input_(std::move(input)),
          input_cardinality_(input_cardinality),
          buffer_size_(buffer_size),
          engine_(seed) {}

    std::optional<Element> next() override {
      while (!input_done_ && buffer_.size() < buffer_size_) {
        auto element = input_->next();
        if (element) {
          buffer_.push_back(std::move(*element));
          ++pulled_;
        } else {
          end_input();
        }
      }
      if (buffer_.empty()) return std::nullopt;
      const size_t chosen = draw(buffer_.size());
      std::swap(buffer_[chosen], buffer_.back());
      Element element = std::move(buffer_.back());
      buffer_.pop_back();
      return element;
    }

    /// Over an input of known cardinality, replays next()'s fills and draws on numbers
    /// standing for the elements, then reads from the input only the elements left in
    /// the buffer (skipping the input up to the oldest of them). Otherwise calls next().
    int64_t skip(int64_t count) override {
      if (count <= 0) return 0;
      if (input_cardinality_ == kUnknownCardinality) return Iterator::skip(count);
      // The buffer as next() would hold it: -1 - i for buffer_[i], or n >= 0 for the
      // input's n-th element from its current position.
      std::vector<int64_t> slots(buffer_.size());
      for (size_t i = 0; i < slots.size(); ++i) slots[i] = -1 - static_cast<int64_t>(i);
      const int64_t input_left = input_done_                                       ? 0
                                 : input_cardinality_ == kInfiniteCardinality ? std::numeric_limits<int64_t>::max()
                                                                              : input_cardinality_ - pulled_;
      int64_t taken = 0;  // input elements the replay put in the buffer
      bool input_ends = false;
      int64_t skipped = 0;
      for (; skipped < count; ++skipped) {
        while (!input_ends && slots.size() < buffer_size_) {
          if (taken == input_left) {
            input_ends = true;
          } else {
            slots.push_back(taken++);
          }
        }
        if (slots.empty()) break;
        std::swap(slots[draw(slots.size())], slots.back());
        slots.pop_back();
      }
      refill(slots, taken);
      if (input_ends) end_input();
      return skipped;
    }

   private:
    /// A uniform index below `size`. Modulo keeps the draw identical on every standard
    /// library; its bias, at most size / 2^64, is far below anything a shuffle could show.
    size_t draw(size_t size) { return static_cast<size_t>(engine_() % size); }

    /// Rebuilds buffer_ from skip()'s `slots`, reading the input's next `taken` elements
    /// (making only those still in the buffer).
    void refill(const std::vector<int64_t>& slots, int64_t taken) {
      std::vector<std::pair<int64_t, size_t>> wanted;  // (input element, buffer place)
      std::vector<Element> buffer(slots.size());
      for (size_t place = 0; place < slots.size(); ++place) {
        if (slots[place] < 0) {
          buffer[place] = std::move(buffer_[static_cast<size_t>(-1 - slots[place])]);
        } else {
          wanted.emplace_back(slots[place], place);
        }
      }
      std::sort(wanted.begin(), wanted.end());
      int64_t position = 0;
      for (const auto& [number, place] : wanted) {
        read_past(number - position);
        auto element = input_->next();
        check_input_held(element.has_value() ? 1 : 0, 1);
        buffer[place] = std::move(*element);
        position = number + 1;
      }
      read_past(taken - position);
      buffer_ = std::move(buffer);
    }

    /// Skips `count` input elements that the input is known to hold.
    void read_past(int64_t count) {
      if (count > 0) check_input_held(input_->skip(count), count);
    }

    /// Counts `got` of the `expected` elements just taken from the input; DataError when
    /// the input held fewer than its cardinality promised.
    void check_input_held(int64_t got, int64_t expected) {
      pulled_ += got;
      EST_CHECK(got == expected, DataError, "Dataset::shuffle: the input ended after ", pulled_,
                " elements, fewer than its cardinality promised; is its source changing under it?");
    }

    void end_input() {
      input_done_ = true;
      input_.reset();
    }

    std::unique_ptr<Iterator> input_;
    int64_t input_cardinality_;
    size_t buffer_size_;
    std::mt19937_64 engine_;
    std::vector<Element> buffer_;
    int64_t pulled_ = 0;  ///< elements taken from the input
    bool input_done_ = false;
  };

  std::shared_ptr<const DatasetNode> input_;
  size_t buffer_size_;
  uint64_t seed_;
  bool reshuffle_each_iteration_;
  mutable std::atomic<uint64_t> iterations_made_{0};
};

}  // namespace

Dataset Dataset::shuffle(int64_t buffer_size, std::optional<uint64_t> seed,
                         bool reshuffle_each_iteration) const {
  EST_CHECK(buffer_size >= 1, DataError, "Dataset::shuffle: buffer_size is ", buffer_size,
            ", expected at least 1");
  const uint64_t chosen_seed =
      seed ? *seed : (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  return Dataset(
      std::make_shared<ShuffleNode>(node_, buffer_size, chosen_seed, reshuffle_each_iteration));
}

}  // namespace est::data
