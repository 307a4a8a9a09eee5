// Dataset::cache: keeps the elements of the first complete pass in memory.

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "data/dataset.h"
#include "data/dataset_node.h"

namespace est::data {
namespace {

using CachedElements = std::vector<Element>;

class CacheNode : public DatasetNode {
 public:
  explicit CacheNode(std::shared_ptr<const DatasetNode> input) : input_(std::move(input)) {}

  std::shared_ptr<const DatasetNode> input() const override { return input_; }

  std::shared_ptr<const DatasetNode> on_input(std::shared_ptr<const DatasetNode> input) const override {
    return std::make_shared<CacheNode>(std::move(input));
  }

  std::unique_ptr<Iterator> make_iterator() const override {
    if (auto cached = cached_elements()) return std::make_unique<ReadIterator>(std::move(cached));
    return std::make_unique<FillIterator>(self<CacheNode>(), input_->make_iterator());
  }

  int64_t cardinality() const override { return input_->cardinality(); }

 private:
  /// Yields the cached elements.
  class ReadIterator : public Iterator {
   public:
    explicit ReadIterator(std::shared_ptr<const CachedElements> elements)
        : elements_(std::move(elements)) {}

    std::optional<Element> next() override {
      if (index_ >= elements_->size()) return std::nullopt;
      return (*elements_)[index_++];
    }

    int64_t skip(int64_t count) override {
      const auto skipped = std::clamp<int64_t>(static_cast<int64_t>(elements_->size() - index_), 0, count);
      index_ += static_cast<size_t>(skipped);
      return skipped;
    }

   private:
    std::shared_ptr<const CachedElements> elements_;
    size_t index_ = 0;
  };

  /// Yields the input's elements and keeps them; publishes them once the input ends.
  class FillIterator : public Iterator {
   public:
    FillIterator(std::shared_ptr<const CacheNode> node, std::unique_ptr<Iterator> input)
        : node_(std::move(node)), input_(std::move(input)) {}

    std::optional<Element> next() override {
      if (!input_) return std::nullopt;
      auto element = input_->next();
      if (element) {
        elements_.push_back(*element);
        return element;
      }
      input_.reset();
      node_->publish(std::make_shared<const CachedElements>(std::move(elements_)));
      return std::nullopt;
    }

   private:
    std::shared_ptr<const CacheNode> node_;
    std::unique_ptr<Iterator> input_;
    CachedElements elements_;
  };

  std::shared_ptr<const CachedElements> cached_elements() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_;
  }

  /// Keeps the first complete pass; a later one (from a concurrent iterator) is dropped.
  void publish(std::shared_ptr<const CachedElements> elements) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!cached_) cached_ = std::move(elements);
  }

  std::shared_ptr<const DatasetNode> input_;
  mutable std::mutex mutex_;
  mutable std::shared_ptr<const CachedElements> cached_;
};

}  // namespace

Dataset Dataset::cache() const { return Dataset(std::make_shared<CacheNode>(node_)); }

}  // namespace est::data
