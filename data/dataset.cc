#include "data/dataset.h"

#include <utility>

#include "data/dataset_node.h"

namespace est::data {

Dataset::Dataset(std::shared_ptr<const DatasetNode> node) : node_(std::move(node)) {}

Dataset DatasetOf(std::shared_ptr<const DatasetNode> node) { return Dataset(std::move(node)); }

std::unique_ptr<Iterator> Dataset::make_iterator() const { return node_->make_iterator(); }

int64_t Dataset::cardinality() const { return node_->cardinality(); }

}  // namespace est::data
