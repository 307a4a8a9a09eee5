#pragma once
// A dataset of elements held in memory, in order: what a test parsed, to batch like a file's.

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "data/dataset.h"
#include "data/element.h"

namespace est::testing {

/// A dataset of `elements`, in order.
inline est::data::Dataset ElementsDataset(std::vector<est::data::Element> elements) {
  auto shared = std::make_shared<const std::vector<est::data::Element>>(std::move(elements));
  return est::data::Dataset::FromGenerator([shared] {
    struct Replay : est::data::Iterator {
      std::shared_ptr<const std::vector<est::data::Element>> elements;
      size_t next_index = 0;
      std::optional<est::data::Element> next() override {
        if (next_index == elements->size()) return std::nullopt;
        return (*elements)[next_index++];
      }
    };
    auto replay = std::make_unique<Replay>();
    replay->elements = shared;
    return replay;
  });
}

}  // namespace est::testing
