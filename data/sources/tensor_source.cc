// Dataset::FromTensors: slices in-memory tensors along dim 0, lazily.

#include <algorithm>
#include <sstream>
#include <string>
#include <utility>

#include "common/error.h"
#include "data/dataset.h"
#include "data/dataset_node.h"

namespace est::data {
namespace {

class TensorSourceNode : public DatasetNode {
 public:
  TensorSourceNode(Features features, at::Tensor labels, int64_t size)
      : tensors_{std::move(features), std::move(labels)}, size_(size) {}

  std::unique_ptr<Iterator> make_iterator() const override {
    return std::make_unique<SliceIterator>(self<TensorSourceNode>());
  }

  int64_t cardinality() const override { return size_; }

  const Element* sliced_tensors() const override { return &tensors_; }

 private:
  class SliceIterator : public Iterator {
   public:
    explicit SliceIterator(std::shared_ptr<const TensorSourceNode> node) : node_(std::move(node)) {}

    std::optional<Element> next() override {
      if (index_ >= node_->size_) return std::nullopt;
      Element element;
      for (const auto& [key, tensor] : node_->tensors_.features)
        element.features.emplace(key, tensor.select(0, index_));
      if (node_->tensors_.labels.defined())
        element.labels = node_->tensors_.labels.select(0, index_);
      ++index_;
      return element;
    }

    int64_t skip(int64_t count) override {
      const int64_t skipped = std::clamp<int64_t>(node_->size_ - index_, 0, count);
      index_ += skipped;
      return skipped;
    }

   private:
    std::shared_ptr<const TensorSourceNode> node_;
    int64_t index_ = 0;
  };

  Element tensors_;  ///< the whole tensors, not one element
  int64_t size_;
};

/// "key: size" for every tensor, to name the disagreeing sizes.
std::string DescribeSizes(const Features& features, const at::Tensor& labels) {
  std::ostringstream out;
  const char* separator = "";
  for (const auto& [key, tensor] : features) {
    out << separator << "'" << key << "': " << tensor.size(0);
    separator = ", ";
  }
  if (labels.defined()) out << separator << "labels: " << labels.size(0);
  return out.str();
}

}  // namespace

Dataset Dataset::FromTensors(Features features, at::Tensor labels) {
  EST_CHECK(!features.empty() || labels.defined(), DataError,
            "Dataset::FromTensors: no features and no labels to slice");
  for (const auto& [key, tensor] : features) {
    EST_CHECK(tensor.defined(), DataError, "Dataset::FromTensors: feature '", key,
              "' is an undefined tensor");
    EST_CHECK(tensor.dim() >= 1, DataError, "Dataset::FromTensors: feature '", key,
              "' is a scalar; every tensor needs a dim 0 to slice along");
  }
  EST_CHECK(!labels.defined() || labels.dim() >= 1, DataError,
            "Dataset::FromTensors: labels are a scalar; every tensor needs a dim 0 to slice along");
  const int64_t size = features.empty() ? labels.size(0) : features.begin()->second.size(0);
  bool sizes_agree = !labels.defined() || labels.size(0) == size;
  for (const auto& [key, tensor] : features) sizes_agree = sizes_agree && tensor.size(0) == size;
  EST_CHECK(sizes_agree, DataError, "Dataset::FromTensors: dim-0 sizes differ (",
            DescribeSizes(features, labels), ")");
  return Dataset(std::make_shared<TensorSourceNode>(std::move(features), std::move(labels), size));
}

}  // namespace est::data
