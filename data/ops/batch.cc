// Dataset::batch: stacks consecutive elements along a new leading dimension.

#include <algorithm>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/memory_limit.h"
#include "data/dataset.h"
#include "data/dataset_node.h"
#include "data/ops/saturating.h"
#include "data/ops/slice_batch_iterator.h"
#include "data/ops/stack_tensors.h"

namespace est::data {
namespace {

/// "{a, b}": the feature keys of an element, for an error message.
std::string DescribeKeys(const Features& features) {
  std::ostringstream out;
  out << "{";
  const char* separator = "";
  for (const auto& entry : features) {
    out << separator << "'" << entry.first << "'";
    separator = ", ";
  }
  out << "}";
  return out.str();
}

/// Stacks the tensors that `get` picks from each element; `what` names them in errors.
template <typename Get>
at::Tensor StackChecked(const std::vector<Element>& elements, const std::string& what, Get get) {
  std::vector<at::Tensor> tensors;
  tensors.reserve(elements.size());
  const at::Tensor& first = get(elements.front());
  EST_CHECK(first.defined(), DataError, "Dataset::batch: ", what,
            " is an undefined tensor in element 0 of the batch");
  for (size_t i = 0; i < elements.size(); ++i) {
    const at::Tensor& tensor = get(elements[i]);
    EST_CHECK(tensor.defined(), DataError, "Dataset::batch: ", what,
              " is an undefined tensor in element ", i, " of the batch");
    EST_CHECK(tensor.sizes() == first.sizes(), DataError, "Dataset::batch: ", what, " has shape ",
              first.sizes(), " in element 0 of the batch but shape ", tensor.sizes(),
              " in element ", i, "; batch needs equal shapes");
    EST_CHECK(tensor.scalar_type() == first.scalar_type(), DataError, "Dataset::batch: ", what,
              " has dtype ", first.scalar_type(), " in element 0 of the batch but dtype ",
              tensor.scalar_type(), " in element ", i, "; batch needs equal dtypes");
    EST_CHECK(tensor.device() == first.device(), DataError, "Dataset::batch: ", what,
              " is on device ", first.device(), " in element 0 of the batch but on ",
              tensor.device(), " in element ", i);
    tensors.push_back(tensor);
  }
  return StackTensors(tensors);
}

/// One Element whose tensors stack those of `elements`.
Element Stack(const std::vector<Element>& elements) {
  const Element& first = elements.front();
  for (size_t i = 1; i < elements.size(); ++i) {
    const Features& features = elements[i].features;
    bool same_keys = features.size() == first.features.size();
    for (auto a = features.begin(), b = first.features.begin(); same_keys && a != features.end();
         ++a, ++b)
      same_keys = a->first == b->first;
    EST_CHECK(same_keys, DataError, "Dataset::batch: element 0 of the batch has features ",
              DescribeKeys(first.features), " but element ", i, " has ", DescribeKeys(features));
    EST_CHECK(elements[i].labels.defined() == first.labels.defined(), DataError,
              "Dataset::batch: element 0 of the batch ", first.labels.defined() ? "has" : "has no",
              " labels but element ", i, first.labels.defined() ? " has none" : " has labels");
  }
  Element batch;
  for (const auto& entry : first.features) {
    const std::string& key = entry.first;
    batch.features.emplace(key, StackChecked(elements, "feature '" + key + "'",
                                             [&key](const Element& e) -> const at::Tensor& {
                                               return e.features.at(key);
                                             }));
  }
  if (first.labels.defined()) {
    batch.labels = StackChecked(elements, "labels",
                                [](const Element& e) -> const at::Tensor& { return e.labels; });
  }
  return batch;
}

/// Fails with a DataError before a batch of `batch_size` elements like `first` is gathered
/// when it could not fit: it needs the elements and their stacked copy.
void CheckBatchFits(const Element& first, size_t batch_size) {
  double element_bytes = first.labels.defined() ? static_cast<double>(first.labels.nbytes()) : 0;
  for (const auto& entry : first.features) {
    if (entry.second.defined()) element_bytes += static_cast<double>(entry.second.nbytes());
  }
  const double needed = 2 * element_bytes * static_cast<double>(batch_size);
  const auto limit = static_cast<double>(MemoryLimitBytes());
  EST_CHECK(needed <= limit, DataError, "Dataset::batch: a batch of ", batch_size, " elements of ",
            DescribeBytes(element_bytes), " each needs about ", DescribeBytes(needed),
            " (the elements and their stacked copy), more than the ", DescribeBytes(limit),
            " this process may use (the machine's memory, or its cgroup's limit); use a smaller batch_size");
}

class BatchNode : public DatasetNode {
 public:
  BatchNode(std::shared_ptr<const DatasetNode> input, int64_t batch_size, bool drop_remainder)
      : input_(std::move(input)),
        batch_size_(static_cast<size_t>(batch_size)),
        drop_remainder_(drop_remainder) {}

  std::unique_ptr<Iterator> make_iterator() const override {
    if (input_->sliced_tensors() != nullptr) {
      return std::make_unique<SliceBatchIterator>(input_, static_cast<int64_t>(batch_size_),
                                                  drop_remainder_);
    }
    return std::make_unique<BatchIterator>(input_->make_iterator(), batch_size_, drop_remainder_);
  }

  int64_t cardinality() const override {
    const int64_t elements = input_->cardinality();
    if (elements < 0) return elements;
    const auto batch_size = static_cast<int64_t>(batch_size_);
    return elements / batch_size + (!drop_remainder_ && elements % batch_size != 0 ? 1 : 0);
  }

 private:
  class BatchIterator : public Iterator {
   public:
    BatchIterator(std::unique_ptr<Iterator> input, size_t batch_size, bool drop_remainder)
        : input_(std::move(input)), batch_size_(batch_size), drop_remainder_(drop_remainder) {}

    std::optional<Element> next() override {
      if (!input_) return std::nullopt;
      std::vector<Element> elements;
      elements.reserve(std::min<size_t>(batch_size_, kMaxReserve));
      while (elements.size() < batch_size_) {
        auto element = input_->next();
        if (!element) {
          input_.reset();
          break;
        }
        elements.push_back(std::move(*element));
        if (!checked_fit_) {
          CheckBatchFits(elements.front(), batch_size_);
          checked_fit_ = true;
        }
      }
      if (elements.empty() || (drop_remainder_ && elements.size() < batch_size_))
        return std::nullopt;
      return Stack(elements);
    }

    /// Skips the input's elements of whole batches; stacks nothing.
    int64_t skip(int64_t count) override {
      if (!input_) return 0;
      const auto batch_size = static_cast<int64_t>(batch_size_);
      const int64_t wanted = SaturatingProduct(count, batch_size);
      const int64_t skipped = input_->skip(wanted);
      if (skipped == wanted) return count;
      input_.reset();
      const bool partial = skipped % batch_size != 0 && !drop_remainder_;
      return skipped / batch_size + (partial ? 1 : 0);
    }

   private:
    /// Elements reserved up front; a huge batch_size grows its vector as elements arrive.
    static constexpr size_t kMaxReserve = 4096;

    std::unique_ptr<Iterator> input_;
    size_t batch_size_;
    bool drop_remainder_;
    bool checked_fit_ = false;
  };

  std::shared_ptr<const DatasetNode> input_;
  size_t batch_size_;
  bool drop_remainder_;
};

}  // namespace

Dataset Dataset::batch(int64_t batch_size, bool drop_remainder) const {
  EST_CHECK(batch_size >= 1, DataError, "Dataset::batch: batch_size is ", batch_size,
            ", expected at least 1");
  return Dataset(std::make_shared<BatchNode>(node_, batch_size, drop_remainder));
}

}  // namespace est::data
