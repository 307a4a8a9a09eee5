#pragma once
/// Internal: Dataset::batch directly over a FromTensors source.

#include <cstdint>
#include <memory>

#include "data/dataset_node.h"
#include "data/iterator.h"

namespace est::data {

/// Batches of a FromTensors source taken as runs of its tensors' dim-0 slices: each batch
/// is one contiguous copy per tensor (narrow, then clone), with the values, dtypes and
/// shapes that stacking the source's elements one by one gives. The batches own their
/// memory, as every batch does, so the consumer may modify them in place.
class SliceBatchIterator : public Iterator {
 public:
  /// Batches of `batch_size` slices of source->sliced_tensors(), which must be non-null.
  SliceBatchIterator(std::shared_ptr<const DatasetNode> source, int64_t batch_size,
                     bool drop_remainder);

  std::optional<Element> next() override;
  /// Moves the index past whole batches, copying nothing.
  int64_t skip(int64_t count) override;

 private:
  std::shared_ptr<const DatasetNode> source_;  ///< keeps tensors_ alive
  const Element& tensors_;
  int64_t size_;  ///< the source's number of elements
  int64_t batch_size_;
  bool drop_remainder_;
  int64_t index_ = 0;  ///< the first element of the next batch
};

}  // namespace est::data
