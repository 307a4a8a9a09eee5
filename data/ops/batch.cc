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

/// The largest size of each dimension over `tensors` (all of one rank).
std::vector<int64_t> LargestShape(const std::vector<at::Tensor>& tensors) {
  std::vector<int64_t> shape(tensors.front().sizes().begin(), tensors.front().sizes().end());
  for (const at::Tensor& tensor : tensors) {
    for (size_t d = 0; d < shape.size(); ++d) shape[d] = std::max(shape[d], tensor.size(static_cast<int64_t>(d)));
  }
  return shape;
}

/// Stacks `tensors` (one rank) into [n, largest shape], each padded at the end with zeros.
at::Tensor StackPadded(const std::vector<at::Tensor>& tensors) {
  const std::vector<int64_t> largest = LargestShape(tensors);
  bool same = true;
  for (const at::Tensor& tensor : tensors) same = same && tensor.sizes() == at::IntArrayRef(largest);
  if (same) return StackTensors(tensors);
  return StackPaddedTensors(tensors, largest);
}

/// Stacks the tensors that `get` picks from each element (padded: of equal rank, padded to
/// the largest); `what` names them in errors.
template <typename Get>
at::Tensor StackChecked(const std::vector<Element>& elements, bool padded, const std::string& what, Get get) {
  std::vector<at::Tensor> tensors;
  tensors.reserve(elements.size());
  const at::Tensor& first = get(elements.front());
  EST_CHECK(first.defined(), DataError, "Dataset::batch: ", what,
            " is an undefined tensor in element 0 of the batch");
  for (size_t i = 0; i < elements.size(); ++i) {
    const at::Tensor& tensor = get(elements[i]);
    EST_CHECK(tensor.defined(), DataError, "Dataset::batch: ", what,
              " is an undefined tensor in element ", i, " of the batch");
    EST_CHECK(padded ? tensor.dim() == first.dim() : tensor.sizes() == first.sizes(), DataError,
              "Dataset::batch: ", what, " has shape ", first.sizes(), " in element 0 of the batch but shape ",
              tensor.sizes(), " in element ", i,
              padded ? "; padded_batch needs equal ranks" : "; batch needs equal shapes (padded_batch pads them)");
    EST_CHECK(tensor.scalar_type() == first.scalar_type(), DataError, "Dataset::batch: ", what,
              " has dtype ", first.scalar_type(), " in element 0 of the batch but dtype ",
              tensor.scalar_type(), " in element ", i, "; batch needs equal dtypes");
    EST_CHECK(tensor.device() == first.device(), DataError, "Dataset::batch: ", what,
              " is on device ", first.device(), " in element 0 of the batch but on ",
              tensor.device(), " in element ", i);
    tensors.push_back(tensor);
  }
  return padded ? StackPadded(tensors) : StackTensors(tensors);
}

}  // namespace

Element BatchElements(const std::vector<Element>& elements, bool padded) {
  EST_CHECK(!elements.empty(), DataError, "Dataset::batch: a batch of no elements");
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
    batch.features.emplace(key, StackChecked(elements, padded, "feature '" + key + "'",
                                             [&key](const Element& e) -> const at::Tensor& {
                                               return e.features.at(key);
                                             }));
  }
  if (first.labels.defined()) {
    batch.labels = StackChecked(elements, padded, "labels",
                                [](const Element& e) -> const at::Tensor& { return e.labels; });
  }
  return batch;
}

namespace {

/// What a gathered element costs beside its values, at least: an Element, and for each tensor
/// its TensorImpl, StorageImpl and allocation (and a node of the features' map). Small
/// elements (a scalar feature and label) cost far more than their values while gathered.
constexpr double kElementOverheadBytes = 64;
constexpr double kTensorOverheadBytes = 320;

/// Fails with a DataError before a batch of `batch_size` elements like `first` is gathered
/// when it could not fit: it needs the elements (their values and their tensors' overhead)
/// and their stacked copy.
void CheckBatchFits(const Element& first, size_t batch_size) {
  double element_bytes = first.labels.defined() ? static_cast<double>(first.labels.nbytes()) : 0;
  double gathered_bytes = kElementOverheadBytes + (first.labels.defined() ? kTensorOverheadBytes : 0);
  for (const auto& entry : first.features) {
    if (entry.second.defined()) element_bytes += static_cast<double>(entry.second.nbytes());
    gathered_bytes += kTensorOverheadBytes;
  }
  gathered_bytes += element_bytes;
  const double needed = (gathered_bytes + element_bytes) * static_cast<double>(batch_size);
  const auto limit = static_cast<double>(MemoryLimitBytes());
  EST_CHECK(needed <= limit, DataError, "Dataset::batch: a batch of ", batch_size, " elements of ",
            DescribeBytes(element_bytes), " each needs about ", DescribeBytes(needed),
            " (the elements, their tensors and their stacked copy), more than the ", DescribeBytes(limit),
            " this process may use (the machine's memory, or its cgroup's limit); use a smaller batch_size");
}

class BatchNode : public DatasetNode {
 public:
  BatchNode(std::shared_ptr<const DatasetNode> input, int64_t batch_size, bool drop_remainder, bool padded)
      : input_(std::move(input)),
        batch_size_(static_cast<size_t>(batch_size)),
        drop_remainder_(drop_remainder),
        padded_(padded) {}

  std::shared_ptr<const DatasetNode> input() const override { return input_; }

  std::shared_ptr<const DatasetNode> on_input(std::shared_ptr<const DatasetNode> input) const override {
    return std::make_shared<BatchNode>(std::move(input), static_cast<int64_t>(batch_size_), drop_remainder_, padded_);
  }

  std::unique_ptr<Iterator> make_iterator() const override {
    if (input_->sliced_tensors() != nullptr) {  // equal shapes: nothing to pad
      return std::make_unique<SliceBatchIterator>(input_, static_cast<int64_t>(batch_size_),
                                                  drop_remainder_);
    }
    return std::make_unique<BatchIterator>(input_->make_iterator(), batch_size_, drop_remainder_, padded_);
  }

  int64_t cardinality() const override {
    const int64_t elements = input_->cardinality();
    if (elements < 0) return elements;
    return BatchesOf(elements, static_cast<int64_t>(batch_size_), drop_remainder_);
  }

 private:
  class BatchIterator : public Iterator {
   public:
    BatchIterator(std::unique_ptr<Iterator> input, size_t batch_size, bool drop_remainder, bool padded)
        : input_(std::move(input)), batch_size_(batch_size), drop_remainder_(drop_remainder), padded_(padded) {}

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
      return BatchElements(elements, padded_);
    }

    /// Skips the input's elements of whole batches; stacks nothing.
    int64_t skip(int64_t count) override {
      if (!input_) return 0;
      const auto batch_size = static_cast<int64_t>(batch_size_);
      const int64_t wanted = SaturatingProduct(count, batch_size);
      const int64_t skipped = input_->skip(wanted);
      if (skipped == wanted) return count;
      input_.reset();
      return BatchesOf(skipped, batch_size, drop_remainder_);
    }

   private:
    /// Elements reserved up front; a huge batch_size grows its vector as elements arrive.
    static constexpr size_t kMaxReserve = 4096;

    std::unique_ptr<Iterator> input_;
    size_t batch_size_;
    bool drop_remainder_;
    bool padded_;
    bool checked_fit_ = false;
  };

  std::shared_ptr<const DatasetNode> input_;
  size_t batch_size_;
  bool drop_remainder_;
  bool padded_;
};

}  // namespace

Dataset Dataset::batch(int64_t batch_size, bool drop_remainder) const {
  EST_CHECK(batch_size >= 1, DataError, "Dataset::batch: batch_size is ", batch_size,
            ", expected at least 1");
  return Dataset(std::make_shared<BatchNode>(node_, batch_size, drop_remainder, /*padded=*/false));
}

Dataset Dataset::padded_batch(int64_t batch_size, bool drop_remainder) const {
  EST_CHECK(batch_size >= 1, DataError, "Dataset::padded_batch: batch_size is ", batch_size,
            ", expected at least 1");
  return Dataset(std::make_shared<BatchNode>(node_, batch_size, drop_remainder, /*padded=*/true));
}

}  // namespace est::data
