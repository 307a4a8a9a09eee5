// Dataset::FromGenerator: a source whose iterators a user function makes.

#include <utility>

#include "common/error.h"
#include "data/dataset.h"
#include "data/dataset_node.h"

namespace est::data {
namespace {

class GeneratorSourceNode : public DatasetNode {
 public:
  explicit GeneratorSourceNode(std::function<std::unique_ptr<Iterator>()> make_iterator)
      : make_iterator_(std::move(make_iterator)) {}

  std::unique_ptr<Iterator> make_iterator() const override {
    auto iterator = make_iterator_();
    EST_CHECK(iterator != nullptr, DataError,
              "Dataset::FromGenerator: the generator function returned a null iterator");
    return iterator;
  }

  int64_t cardinality() const override { return kUnknownCardinality; }

 private:
  std::function<std::unique_ptr<Iterator>()> make_iterator_;
};

}  // namespace

Dataset Dataset::FromGenerator(std::function<std::unique_ptr<Iterator>()> make_iterator) {
  EST_CHECK(make_iterator != nullptr, DataError,
            "Dataset::FromGenerator: the generator function is empty");
  return Dataset(std::make_shared<GeneratorSourceNode>(std::move(make_iterator)));
}

}  // namespace est::data
