// Dataset::filter: keeps the elements a predicate accepts.

#include <utility>

#include "common/error.h"
#include "data/dataset.h"
#include "data/dataset_node.h"

namespace est::data {
namespace {

class FilterNode : public DatasetNode {
 public:
  FilterNode(std::shared_ptr<const DatasetNode> input,
             std::function<bool(const Element&)> predicate)
      : input_(std::move(input)), predicate_(std::move(predicate)) {}

  std::shared_ptr<const DatasetNode> input() const override { return input_; }

  std::shared_ptr<const DatasetNode> on_input(std::shared_ptr<const DatasetNode> input) const override {
    return std::make_shared<FilterNode>(std::move(input), predicate_);
  }

  std::unique_ptr<Iterator> make_iterator() const override {
    return std::make_unique<FilterIterator>(self<FilterNode>(), input_->make_iterator());
  }

  int64_t cardinality() const override {
    return input_->cardinality() == 0 ? 0 : kUnknownCardinality;
  }

 private:
  class FilterIterator : public Iterator {
   public:
    FilterIterator(std::shared_ptr<const FilterNode> node, std::unique_ptr<Iterator> input)
        : node_(std::move(node)), input_(std::move(input)) {}

    std::optional<Element> next() override {
      while (input_) {
        auto element = input_->next();
        if (!element) {
          input_.reset();
          break;
        }
        if (node_->predicate_(*element)) return element;
      }
      return std::nullopt;
    }

   private:
    std::shared_ptr<const FilterNode> node_;
    std::unique_ptr<Iterator> input_;
  };

  std::shared_ptr<const DatasetNode> input_;
  std::function<bool(const Element&)> predicate_;
};

}  // namespace

Dataset Dataset::filter(std::function<bool(const Element&)> predicate) const {
  EST_CHECK(predicate != nullptr, DataError, "Dataset::filter: the predicate is empty");
  return Dataset(std::make_shared<FilterNode>(node_, std::move(predicate)));
}

}  // namespace est::data
