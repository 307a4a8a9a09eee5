#pragma once
/// A request's inputs as both inference protocols carry them: tensors, and inputs of byte
/// strings (the Open Inference Protocol's BYTES, TensorFlow's DT_STRING); and the tensors a
/// model takes made of them, serialized records parsed by the model's serving input.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "data/element.h"

namespace est::serving {

class Predictor;

/// The byte strings of one input, row-major in its shape.
struct ByteStrings {
  std::vector<int64_t> shape;
  std::vector<std::string> values;
};

/// A request's inputs, decoded.
struct WireInputs {
  Features tensors;
  std::map<std::string, ByteStrings> strings;

  /// Whether an input of `name` is given, of either kind.
  bool has(const std::string& name) const { return tensors.count(name) != 0 || strings.count(name) != 0; }
};

/// The tensors `predictor`'s model takes for `inputs`: the tensors themselves, or, for a model
/// of serialized records, the records of its one input (of shape [n]) parsed. RequestError
/// naming the input for byte strings a model of tensors does not take, or for anything but
/// that one input of records.
Features RequestTensors(WireInputs inputs, const Predictor& predictor);

/// Decodes byte strings in the Open Inference Protocol's raw form (each a 4-byte little-endian
/// length, then its bytes): exactly as many as `shape` holds, in `raw`. RequestError naming
/// `input` otherwise.
ByteStrings ByteStringsFromRaw(const std::string& input, const std::vector<int64_t>& shape, const std::string& raw,
                               int64_t max_bytes);

/// Byte strings of `shape` from typed values: one per element (`broadcast`: or fewer, the last
/// repeated, empty strings when none, as TensorFlow reads a TensorProto), at most `max_bytes`
/// bytes in all. RequestError naming `input` otherwise.
ByteStrings ByteStringsFromValues(const std::string& input, const std::vector<int64_t>& shape,
                                  std::vector<std::string> values, int64_t max_bytes, bool broadcast);

}  // namespace est::serving
