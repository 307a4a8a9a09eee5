// Dataset::take: the first elements of the input.

#include <algorithm>
#include <utility>

#include "common/error.h"
#include "data/dataset.h"
#include "data/dataset_node.h"

namespace est::data {
namespace {

class TakeNode : public DatasetNode {
 public:
  TakeNode(std::shared_ptr<const DatasetNode> input, int64_t count)
      : input_(std::move(input)), count_(count) {}

  std::shared_ptr<const DatasetNode> input() const override { return input_; }

  std::shared_ptr<const DatasetNode> on_input(std::shared_ptr<const DatasetNode> input) const override {
    return std::make_shared<TakeNode>(std::move(input), count_);
  }

  std::unique_ptr<Iterator> make_iterator() const override {
    return std::make_unique<TakeIterator>(input_->make_iterator(), count_);
  }

  int64_t cardinality() const override {
    const int64_t elements = input_->cardinality();
    if (count_ < 0) return elements;
    if (elements == kUnknownCardinality) return count_ == 0 ? 0 : kUnknownCardinality;
    return elements == kInfiniteCardinality ? count_ : std::min(elements, count_);
  }

 private:
  class TakeIterator : public Iterator {
   public:
    TakeIterator(std::unique_ptr<Iterator> input, int64_t count)
        : input_(std::move(input)), remaining_(count) {}

    std::optional<Element> next() override {
      if (remaining_ == 0 || !input_) return std::nullopt;
      auto element = input_->next();
      if (!element) {
        input_.reset();
        return std::nullopt;
      }
      if (remaining_ > 0) --remaining_;
      if (remaining_ == 0) input_.reset();
      return element;
    }

    int64_t skip(int64_t count) override {
      if (remaining_ == 0 || !input_) return 0;
      const int64_t wanted = remaining_ < 0 ? count : std::min(count, remaining_);
      const int64_t skipped = input_->skip(wanted);
      if (remaining_ > 0) remaining_ -= skipped;
      if (skipped < wanted || remaining_ == 0) input_.reset();
      return skipped;
    }

   private:
    std::unique_ptr<Iterator> input_;
    int64_t remaining_;  ///< -1: unlimited
  };

  std::shared_ptr<const DatasetNode> input_;
  int64_t count_;
};

}  // namespace

Dataset Dataset::take(int64_t count) const {
  EST_CHECK(count >= -1, DataError, "Dataset::take: count is ", count,
            ", expected -1 (all) or a count >= 0");
  return Dataset(std::make_shared<TakeNode>(node_, count));
}

}  // namespace est::data
