#pragma once
/// Tensors in the JSON of the REST APIs (KServe v2's "data", TensorFlow Serving's "instances"
/// and "inputs"): nested JSON arrays read into a request's bytes, checked element by element,
/// and tensors written back as JSON. Every refusal is a RequestError naming the input.

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace est::serving {

/// The elements of `data` in row-major order: `data` itself unless it is an array, whose
/// elements' elements follow in order, to any depth.
std::vector<const nlohmann::json*> JsonElements(const nlohmann::json& data);

/// The shape of `data` as nested arrays: [] for one element. RequestError naming `input` for
/// arrays whose lengths differ at one depth, or an empty array among values.
std::vector<int64_t> JsonShape(const std::string& input, const nlohmann::json& data);

/// The little-endian bytes of `elements` as `dtype`: numbers for numeric dtypes (whole and in
/// range for the integer ones), true or false (or 0 and 1) for kBool. RequestError naming
/// `input` and the element otherwise, or when there are more than `max_bytes` bytes.
std::string BytesOfJsonElements(const std::string& input, at::ScalarType dtype,
                                const std::vector<const nlohmann::json*>& elements, int64_t max_bytes);

/// The byte strings of `elements`: JSON strings, or objects {"b64": "<base64>"} (TensorFlow
/// Serving's binary values). RequestError naming `input` otherwise, or past `max_bytes`.
std::vector<std::string> StringsOfJsonElements(const std::string& input,
                                               const std::vector<const nlohmann::json*>& elements, int64_t max_bytes);

/// `tensor` (on the CPU) as JSON: nested arrays in its shape when `nested` (a number for a
/// tensor of rank 0), else one flat array in row-major order. bool as true/false, float16 and
/// bfloat16 as numbers.
nlohmann::json JsonOfTensor(const at::Tensor& tensor, bool nested);

/// `bytes` in base64 (RFC 4648, padded), as {"b64": …} values carry them.
std::string Base64(const std::string& bytes);

}  // namespace est::serving
