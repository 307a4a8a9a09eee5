#pragma once
/// Internal: one stage of a Dataset pipeline. Each source or transformation (data/sources,
/// data/ops) implements a node; a Dataset is a shared pointer to its last node.

#include <cstdint>
#include <memory>

#include "data/element.h"
#include "data/iterator.h"

namespace est::data {

/// An immutable pipeline stage that makes iterators over its elements. Nodes are shared
/// by every copy of a Dataset and may be iterated from several threads at once. Nodes
/// are always owned by a shared_ptr, and an iterator holds one to its node (self<>()),
/// so iterators outlive the Dataset they came from.
class DatasetNode : public std::enable_shared_from_this<DatasetNode> {
 public:
  virtual ~DatasetNode() = default;
  /// A fresh iterator from the first element.
  virtual std::unique_ptr<Iterator> make_iterator() const = 0;
  /// The number of elements each iterator yields, kInfiniteCardinality or
  /// kUnknownCardinality (data/dataset.h).
  virtual int64_t cardinality() const = 0;
  /// For a FromTensors source: the tensors whose dim-0 slices are its elements, in order,
  /// so that batch can copy a run of slices at once. nullptr for every other node.
  virtual const Element* sliced_tensors() const { return nullptr; }

 protected:
  /// A shared pointer to this node as its concrete type, for an iterator to keep.
  template <typename Node>
  std::shared_ptr<const Node> self() const {
    return std::static_pointer_cast<const Node>(shared_from_this());
  }
};

}  // namespace est::data
