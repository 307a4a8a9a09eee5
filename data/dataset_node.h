#pragma once
/// Internal: one stage of a Dataset pipeline. Each source or transformation (data/sources,
/// data/ops) implements a node; a Dataset is a shared pointer to its last node.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"
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

  /// For a transformation: the node it reads from; nullptr for a source.
  virtual std::shared_ptr<const DatasetNode> input() const { return nullptr; }
  /// For a transformation: the same transformation of `input` (Dataset::auto_shard rebuilds
  /// a pipeline over a sharded source this way); nullptr for a source.
  virtual std::shared_ptr<const DatasetNode> on_input(std::shared_ptr<const DatasetNode> input) const {
    return nullptr;
  }
  /// For a source that reads files: the files, in the order it reads them; nullptr otherwise.
  virtual const std::vector<std::string>* files() const { return nullptr; }
  /// For a source that reads files: the same source reading `files` instead.
  virtual std::shared_ptr<const DatasetNode> with_files(std::vector<std::string> files) const { return nullptr; }

 protected:
  /// A shared pointer to this node as its concrete type, for an iterator to keep.
  template <typename Node>
  std::shared_ptr<const Node> self() const {
    return std::static_pointer_cast<const Node>(shared_from_this());
  }
};

/// The Dataset whose last node is `node`: how a source outside class Dataset (a file
/// reader in its own header) makes its Dataset.
Dataset DatasetOf(std::shared_ptr<const DatasetNode> node);

}  // namespace est::data
