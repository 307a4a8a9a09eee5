#pragma once
/// One element of an input pipeline: named feature tensors and an optional label tensor.

#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <utility>

namespace est {

/// Named input tensors, as model_fn receives them: a std::map whose at() names the missing
/// feature and the features present ("no feature 'image'; this batch has 'x', 'y'").
class Features : public std::map<std::string, at::Tensor> {
 public:
  using Map = std::map<std::string, at::Tensor>;
  using Map::Map;
  Features() = default;
  /// The features of `map`.
  Features(Map map) : Map(std::move(map)) {}  // NOLINT: implicit, as a std::map converts

  /// The tensor of feature `name`; throws std::out_of_range naming `name` and the features
  /// present where there is none.
  at::Tensor& at(const std::string& name);
  /// The tensor of feature `name`; throws std::out_of_range naming `name` and the features
  /// present where there is none.
  const at::Tensor& at(const std::string& name) const;
};

}  // namespace est

namespace est::data {

/// What a Dataset yields: one example, or one batch after Dataset::batch.
struct Element {
  /// The named input tensors.
  Features features;
  /// The labels; an undefined tensor when the data is unlabeled.
  at::Tensor labels;
};

}  // namespace est::data
