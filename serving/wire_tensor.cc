#include "serving/wire_tensor.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "estimator/export/tensor_spec.h"
#include "serving/predictor.h"

namespace est::serving {

int64_t CheckedElementCount(const std::string& input, const std::vector<int64_t>& shape, int64_t element_bytes,
                            int64_t max_bytes) {
  int64_t count = 1;
  const int64_t most = max_bytes / std::max<int64_t>(element_bytes, 1);
  for (int64_t size : shape)
    EST_CHECK(size >= 0, RequestError, "input '", input, "' has size ", size, " in its shape; expected sizes of 0 or more");
  // A size of 0 empties the tensor, but its other sizes still make its strides: they too must
  // stay within the limit (LibTorch's stride arithmetic fails past int64).
  const bool empty = std::find(shape.begin(), shape.end(), 0) != shape.end();
  for (int64_t size : shape) {
    if (size == 0) continue;
    EST_CHECK(count <= most / size, RequestError, "input '", input, "' is too large: its shape ", at::IntArrayRef(shape),
              empty ? " has other sizes whose product exceeds " : " holds more than ", max_bytes,
              " bytes, the most a request may carry");
    count *= size;
  }
  return empty ? 0 : count;
}

at::Tensor TensorFromBytes(const std::string& input, at::ScalarType dtype, const std::vector<int64_t>& shape,
                           const std::string& bytes, int64_t max_bytes) {
  const int64_t element_bytes = static_cast<int64_t>(c10::elementSize(dtype));
  const int64_t count = CheckedElementCount(input, shape, element_bytes, max_bytes);
  EST_CHECK(static_cast<int64_t>(bytes.size()) == count * element_bytes, RequestError, "input '", input, "' carries ",
            bytes.size(), " bytes; expected ", count * element_bytes, " for shape ", at::IntArrayRef(shape), " of ",
            DtypeName(dtype));
  at::Tensor tensor = at::empty(shape, at::TensorOptions().dtype(dtype));
  if (!bytes.empty()) std::memcpy(tensor.data_ptr(), bytes.data(), bytes.size());
  if (dtype == at::kBool) {
    // A bool's byte must be 0 or 1: LibTorch takes any other byte as undefined behaviour.
    const auto* raw = reinterpret_cast<const uint8_t*>(bytes.data());
    for (size_t i = 0; i < bytes.size(); ++i)
      EST_CHECK(raw[i] <= 1, RequestError, "input '", input, "' has byte ", static_cast<int>(raw[i]), " at element ", i,
                "; expected 0 or 1 for a BOOL");
  }
  return tensor;
}

template <typename T>
at::Tensor TensorFromValues(const std::string& input, at::ScalarType dtype, const std::vector<int64_t>& shape,
                            const T* values, int64_t count, int64_t max_bytes, bool broadcast) {
  const int64_t elements = CheckedElementCount(input, shape, static_cast<int64_t>(c10::elementSize(dtype)), max_bytes);
  EST_CHECK(count == elements || (broadcast && count < elements), RequestError, "input '", input, "' carries ", count,
            " values; expected ", elements, " for shape ", at::IntArrayRef(shape));
  std::vector<T> filled(values, values + count);
  filled.resize(static_cast<size_t>(elements), count > 0 ? values[count - 1] : T());
  at::Tensor wide;
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(filled.begin(), filled.end());
    wide = at::from_blob(bytes.data(), {elements}, at::kByte).to(at::kBool);
  } else {
    wide = at::from_blob(filled.data(), {elements}, c10::CppTypeToScalarType<T>::value).clone();
  }
  return wide.to(dtype).reshape(shape);
}

template at::Tensor TensorFromValues<float>(const std::string&, at::ScalarType, const std::vector<int64_t>&,
                                            const float*, int64_t, int64_t, bool);
template at::Tensor TensorFromValues<double>(const std::string&, at::ScalarType, const std::vector<int64_t>&,
                                             const double*, int64_t, int64_t, bool);
template at::Tensor TensorFromValues<int32_t>(const std::string&, at::ScalarType, const std::vector<int64_t>&,
                                              const int32_t*, int64_t, int64_t, bool);
template at::Tensor TensorFromValues<int64_t>(const std::string&, at::ScalarType, const std::vector<int64_t>&,
                                              const int64_t*, int64_t, int64_t, bool);
template at::Tensor TensorFromValues<bool>(const std::string&, at::ScalarType, const std::vector<int64_t>&,
                                           const bool*, int64_t, int64_t, bool);

std::string TensorBytes(const at::Tensor& tensor) {
  const at::Tensor dense = tensor.cpu().contiguous();
  return std::string(static_cast<const char*>(dense.data_ptr()), dense.numel() * dense.element_size());
}

}  // namespace est::serving
