#pragma once
/// Internal: the values of one tf.train.Feature read from its wire format, and the tensors a
/// FeatureSpec makes of them.

#include <ATen/core/Tensor.h>

#include <string>
#include <string_view>
#include <vector>

#include "data/example.h"

namespace est::data {

/// The values of one feature. A Feature that occurs several times merges, as protobuf
/// merges messages: lists of one kind concatenate, and a list of another kind replaces them.
class FeatureValues {
 public:
  /// Merges one serialized tf.train.Feature.
  void add(std::string_view serialized_feature);

  /// Whether no Feature was added (the record lacks the feature).
  bool missing() const { return !present_; }

  /// The tensor a FixedLen `spec` makes of the values; DataError naming `name` when their kind
  /// or number does not fit. A missing feature gives the spec's default.
  at::Tensor fixed_len(const FeatureSpec& spec, const std::string& name) const;

  /// The 1-D tensor (bytes: the decoded values stacked) a VarLen `spec` makes of the values,
  /// and their count in `length`.
  at::Tensor var_len(const FeatureSpec& spec, const std::string& name, int64_t* length) const;

  /// Checks the values' kind against `spec` and returns how many there are (0 when missing).
  int64_t count(const FeatureSpec& spec, const std::string& name) const;
  /// Writes the values, float32 or int64 as `type` says, at `out`, which has room for all.
  void write_numbers(FeatureType type, void* out) const;
  /// Writes the `count` bytes values turned into ids by `spec`'s ids decoder at `out`
  /// (ids_per_value each).
  void write_ids(const FeatureSpec& spec, const std::string& name, int64_t count, int64_t* out) const;

 private:
  /// The values as a float32 or int64 tensor of `shape`, which holds exactly their count.
  at::Tensor numbers(FeatureType type, at::IntArrayRef shape) const;
  /// Each bytes value turned into ids by `spec`'s ids decoder: int64 `shape` + [ids_per_value]
  /// (without that dimension when it is 1), where `shape` holds exactly `count` elements.
  at::Tensor ids(const FeatureSpec& spec, const std::string& name, int64_t count, std::vector<int64_t> shape) const;
  /// Calls `on_list` with each serialized list of the values' kind, in order.
  template <typename OnList>
  void for_each_list(OnList on_list) const {
    if (lists_ > 0) on_list(first_list_);
    for (std::string_view list : more_lists_) on_list(list);
  }
  /// Each bytes value decoded by `spec`'s decoder, stacked along a new dim 0, or with
  /// `stack` false, the decoder's tensor for the one value there is.
  at::Tensor decoded(const FeatureSpec& spec, const std::string& name, int64_t count, bool stack = true) const;

  bool present_ = false;
  int kind_ = 0;  ///< Feature's field number of the list kind: 1 bytes, 2 float, 3 int64; 0 none
  int lists_ = 0;                          ///< how many serialized lists of that kind
  std::string_view first_list_;             ///< the first; a Feature written by TF has one
  std::vector<std::string_view> more_lists_;  ///< the others, in order
};

/// An uninitialized CPU tensor of `shape`, made without LibTorch's dispatcher: a parser makes
/// several per record, where the dispatcher's way costs more than the parsing.
at::Tensor HostTensor(at::IntArrayRef shape, at::ScalarType dtype);

/// An int64 scalar holding `value`, made as HostTensor makes tensors.
at::Tensor HostScalar(int64_t value);

/// "[2, 3]": a shape for an error message.
std::string DescribeShape(const std::vector<int64_t>& shape);

}  // namespace est::data
