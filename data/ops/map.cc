// Dataset::map: applies a function to every element, on the consumer's thread or on
// worker threads (num_parallel_calls).

#include <utility>

#include "common/error.h"
#include "data/dataset.h"
#include "data/dataset_node.h"
#include "data/ops/autotune.h"
#include "data/ops/parallel_map_iterator.h"

namespace est::data {
namespace {

/// Elements a parallel map keeps in flight per parallel call: enough that workers take
/// runs of several elements per hand-off, few enough to bound the memory read ahead.
constexpr size_t kSlotsPerCall = 16;

class MapNode : public DatasetNode {
 public:
  MapNode(std::shared_ptr<const DatasetNode> input, MapFunction fn, int64_t num_parallel_calls)
      : input_(std::move(input)),
        fn_(std::make_shared<const MapFunction>(std::move(fn))),
        num_parallel_calls_(num_parallel_calls) {}

  std::shared_ptr<const DatasetNode> input() const override { return input_; }

  std::shared_ptr<const DatasetNode> on_input(std::shared_ptr<const DatasetNode> input) const override {
    return std::make_shared<MapNode>(std::move(input), *fn_, num_parallel_calls_);
  }

  std::unique_ptr<Iterator> make_iterator() const override {
    const size_t calls = ResolveThreads(num_parallel_calls_);
    if (calls == 1) return std::make_unique<MapIterator>(fn_, input_->make_iterator());
    return std::make_unique<ParallelMapIterator>(input_->make_iterator(), fn_, calls, kSlotsPerCall * calls);
  }

  int64_t cardinality() const override { return input_->cardinality(); }

 private:
  /// Calls the function on the consumer's thread.
  class MapIterator : public Iterator {
   public:
    MapIterator(std::shared_ptr<const MapFunction> fn, std::unique_ptr<Iterator> input)
        : fn_(std::move(fn)), input_(std::move(input)) {}

    std::optional<Element> next() override {
      if (!input_) return std::nullopt;
      auto element = input_->next();
      if (!element) {
        input_.reset();
        return std::nullopt;
      }
      return (*fn_)(std::move(*element));
    }

    /// Skips input elements without calling the function on them.
    int64_t skip(int64_t count) override {
      if (!input_) return 0;
      const int64_t skipped = input_->skip(count);
      if (skipped < count) input_.reset();
      return skipped;
    }

   private:
    std::shared_ptr<const MapFunction> fn_;
    std::unique_ptr<Iterator> input_;
  };

  std::shared_ptr<const DatasetNode> input_;
  std::shared_ptr<const MapFunction> fn_;
  int64_t num_parallel_calls_;  ///< or kAutotune
};

}  // namespace

Dataset Dataset::map(std::function<Element(Element)> fn, int64_t num_parallel_calls) const {
  EST_CHECK(fn != nullptr, DataError, "Dataset::map: the function is empty");
  EST_CHECK(num_parallel_calls >= 1 || num_parallel_calls == kAutotune, DataError,
            "Dataset::map: num_parallel_calls is ", num_parallel_calls,
            ", expected at least 1 or kAutotune (-1)");
  return Dataset(std::make_shared<MapNode>(node_, std::move(fn), num_parallel_calls));
}

}  // namespace est::data
