// Dataset::skip: drops the first elements of the input.

#include <algorithm>
#include <limits>
#include <utility>

#include "common/error.h"
#include "data/dataset.h"
#include "data/dataset_node.h"
#include "data/ops/saturating.h"

namespace est::data {
namespace {

class SkipNode : public DatasetNode {
 public:
  SkipNode(std::shared_ptr<const DatasetNode> input, int64_t count)
      : input_(std::move(input)), count_(count) {}

  std::shared_ptr<const DatasetNode> input() const override { return input_; }

  std::shared_ptr<const DatasetNode> on_input(std::shared_ptr<const DatasetNode> input) const override {
    return std::make_shared<SkipNode>(std::move(input), count_);
  }

  std::unique_ptr<Iterator> make_iterator() const override {
    return std::make_unique<SkipIterator>(input_->make_iterator(), count_);
  }

  int64_t cardinality() const override {
    const int64_t elements = input_->cardinality();
    if (count_ < 0) return elements == kInfiniteCardinality ? kUnknownCardinality : 0;  // never ends, or nothing
    return elements < 0 ? elements : std::max<int64_t>(elements - count_, 0);
  }

 private:
  class SkipIterator : public Iterator {
   public:
    SkipIterator(std::unique_ptr<Iterator> input, int64_t count)
        : input_(std::move(input)), to_skip_(count) {}

    std::optional<Element> next() override {
      if (!input_) return std::nullopt;
      while (to_skip_ != 0) {
        if (!input_->next()) {
          input_.reset();
          return std::nullopt;
        }
        if (to_skip_ > 0) --to_skip_;
      }
      auto element = input_->next();
      if (!element) input_.reset();
      return element;
    }

    int64_t skip(int64_t count) override {
      if (!input_) return 0;
      const int64_t wanted = to_skip_ < 0 ? std::numeric_limits<int64_t>::max() : SaturatingSum(to_skip_, count);
      const int64_t skipped = input_->skip(wanted);
      if (skipped == wanted) {
        to_skip_ = 0;
        return count;
      }
      input_.reset();
      return to_skip_ < 0 ? 0 : std::max<int64_t>(skipped - to_skip_, 0);
    }

   private:
    std::unique_ptr<Iterator> input_;
    int64_t to_skip_;  ///< -1: skip everything
  };

  std::shared_ptr<const DatasetNode> input_;
  int64_t count_;
};

}  // namespace

Dataset Dataset::skip(int64_t count) const {
  EST_CHECK(count >= -1, DataError, "Dataset::skip: count is ", count,
            ", expected -1 (all) or a count >= 0");
  return Dataset(std::make_shared<SkipNode>(node_, count));
}

}  // namespace est::data
