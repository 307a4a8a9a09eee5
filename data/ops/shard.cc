// Dataset::shard: one of several disjoint, interleaved parts of the input.

#include <utility>

#include "common/error.h"
#include "data/dataset.h"
#include "data/dataset_node.h"
#include "data/ops/saturating.h"

namespace est::data {
namespace {

class ShardNode : public DatasetNode {
 public:
  ShardNode(std::shared_ptr<const DatasetNode> input, int64_t num_shards, int64_t index)
      : input_(std::move(input)), num_shards_(num_shards), index_(index) {}

  std::shared_ptr<const DatasetNode> input() const override { return input_; }

  std::shared_ptr<const DatasetNode> on_input(std::shared_ptr<const DatasetNode> input) const override {
    return std::make_shared<ShardNode>(std::move(input), num_shards_, index_);
  }

  std::unique_ptr<Iterator> make_iterator() const override {
    return std::make_unique<ShardIterator>(input_->make_iterator(), num_shards_, index_);
  }

  int64_t cardinality() const override {
    const int64_t elements = input_->cardinality();
    if (elements < 0) return elements;
    return elements > index_ ? (elements - index_ - 1) / num_shards_ + 1 : 0;
  }

 private:
  class ShardIterator : public Iterator {
   public:
    ShardIterator(std::unique_ptr<Iterator> input, int64_t num_shards, int64_t index)
        : input_(std::move(input)), num_shards_(num_shards), to_skip_(index) {}

    std::optional<Element> next() override {
      if (!input_) return std::nullopt;
      for (; to_skip_ > 0; --to_skip_) {
        if (!input_->next()) {
          input_.reset();
          return std::nullopt;
        }
      }
      auto element = input_->next();
      if (!element) {
        input_.reset();
        return std::nullopt;
      }
      to_skip_ = num_shards_ - 1;
      return element;
    }

    /// Skips the input's elements up to and including this shard's count-th next one.
    int64_t skip(int64_t count) override {
      if (!input_ || count == 0) return 0;
      const int64_t wanted = SaturatingSum(to_skip_, SaturatingSum(SaturatingProduct(count - 1, num_shards_), 1));
      const int64_t skipped = input_->skip(wanted);
      if (skipped == wanted) {
        to_skip_ = num_shards_ - 1;
        return count;
      }
      input_.reset();
      return skipped > to_skip_ ? (skipped - to_skip_ - 1) / num_shards_ + 1 : 0;
    }

   private:
    std::unique_ptr<Iterator> input_;
    int64_t num_shards_;
    int64_t to_skip_;  ///< input elements of other shards before this shard's next one
  };

  std::shared_ptr<const DatasetNode> input_;
  int64_t num_shards_;
  int64_t index_;
};

}  // namespace

Dataset Dataset::shard(int64_t num_shards, int64_t index) const {
  EST_CHECK(num_shards >= 1, DataError, "Dataset::shard: num_shards is ", num_shards,
            ", expected at least 1");
  EST_CHECK(index >= 0 && index < num_shards, DataError, "Dataset::shard: index is ", index,
            ", expected 0 <= index < num_shards = ", num_shards);
  return Dataset(std::make_shared<ShardNode>(node_, num_shards, index));
}

}  // namespace est::data
