#include "data/ops/slice_batch_iterator.h"

#include <algorithm>
#include <utility>

#include "data/ops/saturating.h"

namespace est::data {
namespace {

/// Rows [start, start + count) of `tensor` as a new contiguous tensor.
at::Tensor CopyRows(const at::Tensor& tensor, int64_t start, int64_t count) {
  return tensor.narrow(0, start, count).clone(at::MemoryFormat::Contiguous);
}

}  // namespace

SliceBatchIterator::SliceBatchIterator(std::shared_ptr<const DatasetNode> source,
                                       int64_t batch_size, bool drop_remainder)
    : source_(std::move(source)),
      tensors_(*source_->sliced_tensors()),
      size_(tensors_.features.empty() ? tensors_.labels.size(0)
                                      : tensors_.features.begin()->second.size(0)),
      batch_size_(batch_size),
      drop_remainder_(drop_remainder) {}

std::optional<Element> SliceBatchIterator::next() {
  const int64_t count = std::min(batch_size_, size_ - index_);
  if (count <= 0 || (drop_remainder_ && count < batch_size_)) return std::nullopt;
  Element batch;
  for (const auto& [key, tensor] : tensors_.features)
    batch.features.emplace(key, CopyRows(tensor, index_, count));
  if (tensors_.labels.defined()) batch.labels = CopyRows(tensors_.labels, index_, count);
  index_ += count;
  return batch;
}

int64_t SliceBatchIterator::skip(int64_t count) {
  const int64_t available = std::max<int64_t>(size_ - index_, 0);
  const int64_t wanted = SaturatingProduct(count, batch_size_);
  if (wanted <= available) {
    index_ += wanted;
    return count;
  }
  index_ = size_;
  const bool partial = available % batch_size_ != 0 && !drop_remainder_;
  return available / batch_size_ + (partial ? 1 : 0);
}

}  // namespace est::data
