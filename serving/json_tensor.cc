#include "serving/json_tensor.h"

#include <ATen/ATen.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "serving/predictor.h"

namespace est::serving {
namespace {

/// The JSON type of `value`, for messages.
const char* TypeName(const nlohmann::json& value) { return value.type_name(); }

template <typename T>
void AppendValue(std::string& bytes, T value) {
  char raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));
  bytes.append(raw, sizeof(T));
}

/// An integer element of type T, checked: whole, in T's range.
template <typename T>
T IntegerOf(const std::string& input, size_t index, const nlohmann::json& value, at::ScalarType dtype) {
  auto refuse = [&](const std::string& why) -> T {
    EST_THROW(RequestError, "input '", input, "' has ", why, " at element ", index, "; expected an integer of ",
              DtypeName(dtype));
  };
  if (value.is_number_integer()) {
    if (value.is_number_unsigned()) {
      const uint64_t number = value.get<uint64_t>();
      if (number > static_cast<uint64_t>(std::numeric_limits<T>::max())) return refuse(value.dump() + ", out of range");
      return static_cast<T>(number);
    }
    const int64_t number = value.get<int64_t>();
    if (number < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
        number > static_cast<int64_t>(std::numeric_limits<T>::max()))
      return refuse(value.dump() + ", out of range");
    return static_cast<T>(number);
  }
  if (value.is_number_float()) {
    const double number = value.get<double>();
    if (number != std::floor(number) || number < static_cast<double>(std::numeric_limits<T>::min()) ||
        number > static_cast<double>(std::numeric_limits<T>::max()))
      return refuse(value.dump() + ", not a whole number in range");
    return static_cast<T>(number);
  }
  return refuse(std::string("a ") + TypeName(value));
}

double FloatOf(const std::string& input, size_t index, const nlohmann::json& value, at::ScalarType dtype) {
  if (value.is_number()) return value.get<double>();
  // KServe and TensorFlow Serving write non-finite values as strings.
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    if (text == "NaN" || text == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (text == "Infinity" || text == "inf") return std::numeric_limits<double>::infinity();
    if (text == "-Infinity" || text == "-inf") return -std::numeric_limits<double>::infinity();
  }
  EST_THROW(RequestError, "input '", input, "' has a ", TypeName(value), " at element ", index, "; expected a number of ",
            DtypeName(dtype));
}

bool BoolOf(const std::string& input, size_t index, const nlohmann::json& value) {
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number_integer() && (value.get<int64_t>() == 0 || value.get<int64_t>() == 1)) return value.get<int64_t>() == 1;
  EST_THROW(RequestError, "input '", input, "' has ", value.dump(), " at element ", index,
            "; expected true or false for a bool");
}

std::string DecodeBase64(const std::string& input, size_t index, const std::string& text) {
  EST_CHECK(text.size() % 4 == 0, RequestError, "input '", input, "' has a b64 value at element ", index,
            " whose length is not a multiple of 4: not padded base64");
  std::string bytes(text.size() / 4 * 3, '\0');
  const int decoded = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(bytes.data()),
                                      reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  EST_CHECK(decoded >= 0, RequestError, "input '", input, "' has a b64 value at element ", index, " that is not base64");
  size_t padding = 0;
  for (size_t i = text.size(); i > 0 && text[i - 1] == '=' && padding < 2; --i) ++padding;
  bytes.resize(static_cast<size_t>(decoded) - padding);
  return bytes;
}

template <typename T>
nlohmann::json ElementJson(const T& value) {
  if constexpr (std::is_same_v<T, c10::Half> || std::is_same_v<T, c10::BFloat16>) {
    return static_cast<float>(value);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (std::isfinite(value)) return value;
    return std::isnan(value) ? "NaN" : (value > 0 ? "Infinity" : "-Infinity");
  } else {
    return value;
  }
}

template <typename T>
nlohmann::json Nested(const T* data, at::IntArrayRef sizes, size_t dim, int64_t& offset) {
  if (dim == sizes.size()) return ElementJson(data[offset++]);
  nlohmann::json list = nlohmann::json::array();
  for (int64_t i = 0; i < sizes[dim]; ++i) list.push_back(Nested(data, sizes, dim + 1, offset));
  return list;
}

}  // namespace

std::vector<const nlohmann::json*> JsonElements(const nlohmann::json& data) {
  std::vector<const nlohmann::json*> elements;
  std::vector<std::pair<const nlohmann::json*, size_t>> stack{{&data, 0}};
  if (!data.is_array()) return {&data};
  while (!stack.empty()) {
    auto& [array, next] = stack.back();
    if (next == array->size()) {
      stack.pop_back();
      continue;
    }
    const nlohmann::json& item = (*array)[next++];
    if (item.is_array())
      stack.emplace_back(&item, 0);
    else
      elements.push_back(&item);
  }
  return elements;
}

std::vector<int64_t> JsonShape(const std::string& input, const nlohmann::json& data) {
  std::vector<int64_t> shape;
  for (const nlohmann::json* level = &data; level->is_array(); level = &level->front()) {
    shape.push_back(static_cast<int64_t>(level->size()));
    if (level->empty()) break;
  }
  // Every array at each depth must have the same length as the first (a rectangular tensor).
  std::vector<std::pair<const nlohmann::json*, size_t>> stack{{&data, 0}};
  while (!stack.empty()) {
    const auto [value, depth] = stack.back();
    stack.pop_back();
    const bool array_expected = depth < shape.size();
    EST_CHECK(value->is_array() == array_expected, RequestError, "input '", input, "' is ragged: ",
              array_expected ? "a value" : "an array", " at depth ", depth, " where its first element has ",
              array_expected ? "an array" : "a value");
    if (!array_expected) continue;
    EST_CHECK(static_cast<int64_t>(value->size()) == shape[depth], RequestError, "input '", input,
              "' is ragged: an array of ", value->size(), " at depth ", depth, " where the first has ", shape[depth]);
    for (const nlohmann::json& item : *value) stack.emplace_back(&item, depth + 1);
  }
  return shape;
}

std::string BytesOfJsonElements(const std::string& input, at::ScalarType dtype,
                                const std::vector<const nlohmann::json*>& elements, int64_t max_bytes) {
  const size_t element_bytes = c10::elementSize(dtype);
  EST_CHECK(static_cast<int64_t>(elements.size()) <= max_bytes / static_cast<int64_t>(element_bytes), RequestError,
            "input '", input, "' has ", elements.size(), " elements: more than ", max_bytes,
            " bytes, the most a request may carry");
  std::string bytes;
  bytes.reserve(elements.size() * element_bytes);
  for (size_t i = 0; i < elements.size(); ++i) {
    const nlohmann::json& value = *elements[i];
    switch (dtype) {
      case at::kFloat: AppendValue(bytes, static_cast<float>(FloatOf(input, i, value, dtype))); break;
      case at::kDouble: AppendValue(bytes, FloatOf(input, i, value, dtype)); break;
      case at::kHalf: AppendValue(bytes, c10::Half(static_cast<float>(FloatOf(input, i, value, dtype)))); break;
      case at::kBFloat16: AppendValue(bytes, c10::BFloat16(static_cast<float>(FloatOf(input, i, value, dtype)))); break;
      case at::kByte: AppendValue(bytes, IntegerOf<uint8_t>(input, i, value, dtype)); break;
      case at::kChar: AppendValue(bytes, IntegerOf<int8_t>(input, i, value, dtype)); break;
      case at::kShort: AppendValue(bytes, IntegerOf<int16_t>(input, i, value, dtype)); break;
      case at::kInt: AppendValue(bytes, IntegerOf<int32_t>(input, i, value, dtype)); break;
      case at::kLong: AppendValue(bytes, IntegerOf<int64_t>(input, i, value, dtype)); break;
      case at::kBool: AppendValue(bytes, static_cast<uint8_t>(BoolOf(input, i, value))); break;
      default: EST_THROW(RequestError, "input '", input, "' is of dtype ", dtype, ", which JSON cannot carry here");
    }
  }
  return bytes;
}

std::vector<std::string> StringsOfJsonElements(const std::string& input,
                                               const std::vector<const nlohmann::json*>& elements, int64_t max_bytes) {
  std::vector<std::string> strings;
  int64_t total = 0;
  for (size_t i = 0; i < elements.size(); ++i) {
    const nlohmann::json& value = *elements[i];
    if (value.is_string()) {
      strings.push_back(value.get<std::string>());
    } else if (value.is_object() && value.size() == 1 && value.contains("b64") && value.at("b64").is_string()) {
      strings.push_back(DecodeBase64(input, i, value.at("b64").get<std::string>()));
    } else {
      EST_THROW(RequestError, "input '", input, "' has a ", TypeName(value), " at element ", i,
                "; expected a string or {\"b64\": \"<base64>\"}");
    }
    total += static_cast<int64_t>(strings.back().size());
    EST_CHECK(total <= max_bytes, RequestError, "input '", input, "' holds more than ", max_bytes,
              " bytes, the most a request may carry");
  }
  return strings;
}

nlohmann::json JsonOfTensor(const at::Tensor& tensor, bool nested) {
  const at::Tensor dense = tensor.cpu().contiguous();
  const std::vector<int64_t> flat{dense.numel()};
  nlohmann::json json;
  AT_DISPATCH_ALL_TYPES_AND3(at::kBool, at::kHalf, at::kBFloat16, dense.scalar_type(), "JsonOfTensor", [&] {
    int64_t offset = 0;
    json = Nested(dense.data_ptr<scalar_t>(), nested ? dense.sizes() : at::IntArrayRef(flat), 0, offset);
  });
  return json;
}

std::string Base64(const std::string& bytes) {
  std::string text(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int written = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(text.data()),
                                      reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  text.resize(static_cast<size_t>(written));
  return text;
}

}  // namespace est::serving
