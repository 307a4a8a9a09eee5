#include "serving/wire_inputs.h"

#include <ATen/core/Tensor.h>

#include <utility>

#include "common/error.h"
#include "serving/predictor.h"
#include "serving/wire_tensor.h"

namespace est::serving {
namespace {

/// What a model of records takes, for messages.
std::string RecordsInputText(const std::string& name) {
  return "input '" + name + "' of serialized records (BYTES; DT_STRING), shape [-1]";
}

/// Checks that a byte-string total stays within the request's limit.
void CheckTotal(const std::string& input, int64_t total, int64_t max_bytes) {
  EST_CHECK(total <= max_bytes, RequestError, "input '", input, "' is too large: its byte strings hold more than ",
            max_bytes, " bytes, the most a request may carry");
}

}  // namespace

ByteStrings ByteStringsFromRaw(const std::string& input, const std::vector<int64_t>& shape, const std::string& raw,
                               int64_t max_bytes) {
  // Each string takes 4 bytes of length at least, so a shape of more than raw's size / 4 cannot fit.
  const int64_t count = CheckedElementCount(input, shape, 4, max_bytes);
  ByteStrings strings;
  strings.shape = shape;
  size_t offset = 0;
  for (int64_t i = 0; i < count; ++i) {
    EST_CHECK(raw.size() - offset >= 4, RequestError, "input '", input, "' ends inside the length of byte string ", i,
              " of ", count, "; expected each as a 4-byte little-endian length and its bytes");
    const auto* bytes = reinterpret_cast<const unsigned char*>(raw.data() + offset);
    const uint64_t length = uint64_t{bytes[0]} | uint64_t{bytes[1]} << 8 | uint64_t{bytes[2]} << 16 |
                            uint64_t{bytes[3]} << 24;
    offset += 4;
    EST_CHECK(length <= raw.size() - offset, RequestError, "input '", input, "' has byte string ", i, " of ", length,
              " bytes but only ", raw.size() - offset, " bytes follow");
    strings.values.emplace_back(raw, offset, length);
    offset += length;
  }
  EST_CHECK(offset == raw.size(), RequestError, "input '", input, "' carries ", raw.size() - offset,
            " bytes after its ", count, " byte strings; expected exactly as many strings as shape ",
            at::IntArrayRef(shape), " holds");
  CheckTotal(input, static_cast<int64_t>(raw.size()), max_bytes);
  return strings;
}

ByteStrings ByteStringsFromValues(const std::string& input, const std::vector<int64_t>& shape,
                                  std::vector<std::string> values, int64_t max_bytes, bool broadcast) {
  const int64_t count = CheckedElementCount(input, shape, 1, max_bytes);
  const int64_t given = static_cast<int64_t>(values.size());
  EST_CHECK(given == count || (broadcast && given < count), RequestError, "input '", input, "' carries ", given,
            " byte strings; expected ", count, " for shape ", at::IntArrayRef(shape));
  int64_t total = 0;
  for (const std::string& value : values) total += static_cast<int64_t>(value.size());
  CheckTotal(input, total, max_bytes);
  // The repeated last string counts too, before it is copied.
  const int64_t last = given > 0 ? static_cast<int64_t>(values.back().size()) : 0;
  EST_CHECK(last == 0 || count - given <= (max_bytes - total) / last, RequestError, "input '", input,
            "' is too large: its byte strings, the last repeated to fill shape ", at::IntArrayRef(shape),
            ", hold more than ", max_bytes, " bytes, the most a request may carry");
  ByteStrings strings;
  strings.shape = shape;
  strings.values = std::move(values);
  strings.values.resize(static_cast<size_t>(count), given > 0 ? strings.values.back() : std::string());
  return strings;
}

Features RequestTensors(WireInputs inputs, const Predictor& predictor) {
  const std::string& records_input = predictor.records_input();
  if (records_input.empty()) {
    for (const auto& [name, strings] : inputs.strings) {
      for (const TensorSpec& spec : predictor.manifest().inputs)
        EST_CHECK(spec.name != name, RequestError, "input '", name, "' holds byte strings; expected ", spec.describe());
      EST_THROW(RequestError, "the request has input '", name, "', which the model does not take; it takes ",
                QuotedNames(predictor.manifest().inputs));
    }
    return std::move(inputs.tensors);
  }
  const std::string takes = "; it takes the " + RecordsInputText(records_input);
  for (const auto& [name, tensor] : inputs.tensors) {
    EST_CHECK(name != records_input, RequestError, "input '", name, "' holds ", DtypeName(tensor.scalar_type()),
              " values; expected the ", RecordsInputText(records_input));
    EST_THROW(RequestError, "the request has input '", name, "', which the model does not take", takes);
  }
  for (const auto& [name, strings] : inputs.strings)
    EST_CHECK(name == records_input, RequestError, "the request has input '", name,
              "', which the model does not take", takes);
  auto records = inputs.strings.find(records_input);
  EST_CHECK(records != inputs.strings.end(), RequestError, "the request lacks the ", RecordsInputText(records_input));
  EST_CHECK(records->second.shape.size() == 1, RequestError, "input '", records_input, "' has shape ",
            at::IntArrayRef(records->second.shape), "; expected [-1], one serialized record per example");
  return predictor.parse_records(records->second.values);
}

}  // namespace est::serving
