// Dataset::repeat: runs the input again and again.

#include <utility>

#include "common/error.h"
#include "data/dataset.h"
#include "data/dataset_node.h"
#include "data/ops/saturating.h"

namespace est::data {
namespace {

class RepeatNode : public DatasetNode {
 public:
  RepeatNode(std::shared_ptr<const DatasetNode> input, int64_t count)
      : input_(std::move(input)), count_(count) {}

  std::shared_ptr<const DatasetNode> input() const override { return input_; }

  std::shared_ptr<const DatasetNode> on_input(std::shared_ptr<const DatasetNode> input) const override {
    return std::make_shared<RepeatNode>(std::move(input), count_);
  }

  std::unique_ptr<Iterator> make_iterator() const override {
    return std::make_unique<RepeatIterator>(self<RepeatNode>());
  }

  int64_t cardinality() const override {
    const int64_t elements = input_->cardinality();
    if (count_ == 0 || elements == 0) return 0;
    // As tf.data: repeating forever an input not known to be empty never ends.
    if (count_ < 0) return kInfiniteCardinality;
    return elements < 0 ? elements : SaturatingProduct(elements, count_);
  }

 private:
  class RepeatIterator : public Iterator {
   public:
    explicit RepeatIterator(std::shared_ptr<const RepeatNode> node) : node_(std::move(node)) {}

    std::optional<Element> next() override {
      while (start_pass()) {
        if (auto element = input_->next()) {
          yielded_this_pass_ = true;
          return element;
        }
        end_pass();
      }
      return std::nullopt;
    }

    /// Skips within each pass in turn; a pass is made (as next() makes it) for every
    /// pass it moves through, so that a reshuffling input sees the same passes.
    int64_t skip(int64_t count) override {
      int64_t skipped = 0;
      while (skipped < count && start_pass()) {
        const int64_t wanted = count - skipped;
        const int64_t in_pass = input_->skip(wanted);
        skipped += in_pass;
        if (in_pass > 0) yielded_this_pass_ = true;
        if (in_pass < wanted) end_pass();
      }
      return skipped;
    }

   private:
    /// Makes the next pass's iterator when none is running; false once repeating is over.
    bool start_pass() {
      if (done_) return false;
      if (input_) return true;
      if (node_->count_ >= 0 && passes_started_ == node_->count_) {
        done_ = true;
        return false;
      }
      input_ = node_->input_->make_iterator();
      ++passes_started_;
      yielded_this_pass_ = false;
      return true;
    }

    /// Ends the running pass, whose input has ended.
    void end_pass() {
      input_.reset();
      if (!yielded_this_pass_) done_ = true;  // an empty pass: as tf.data, stop repeating
    }

    std::shared_ptr<const RepeatNode> node_;
    std::unique_ptr<Iterator> input_;
    int64_t passes_started_ = 0;
    bool yielded_this_pass_ = false;
    bool done_ = false;
  };

  std::shared_ptr<const DatasetNode> input_;
  int64_t count_;
};

}  // namespace

Dataset Dataset::repeat(int64_t count) const {
  EST_CHECK(count >= -1, DataError, "Dataset::repeat: count is ", count,
            ", expected -1 (forever) or a count >= 0");
  return Dataset(std::make_shared<RepeatNode>(node_, count));
}

}  // namespace est::data
