#pragma once
/// What both inference protocols do with a request's tensor: its shape checked and bounded,
/// its bytes (little-endian, row-major) or typed values copied into a tensor, and a tensor's
/// bytes for an answer. Every refusal is a RequestError naming the input.

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <string>
#include <vector>

namespace est::serving {

/// The number of elements of `shape`, checked: no size below 0, and no more than
/// `max_bytes` bytes of `element_bytes` each, counting a size of 0 as 1 (the other sizes of an
/// empty tensor make its strides). RequestError naming `input` otherwise.
int64_t CheckedElementCount(const std::string& input, const std::vector<int64_t>& shape, int64_t element_bytes,
                            int64_t max_bytes);

/// A tensor of `dtype` and `shape` holding `bytes`, which must be exactly its size.
at::Tensor TensorFromBytes(const std::string& input, at::ScalarType dtype, const std::vector<int64_t>& shape,
                           const std::string& bytes, int64_t max_bytes);

/// A tensor of `dtype` and `shape` from `count` typed values at `values` (of type T), which
/// must be one per element (`broadcast`: or fewer, the last repeated, zeros when none, as
/// TensorFlow's typed fields are read).
template <typename T>
at::Tensor TensorFromValues(const std::string& input, at::ScalarType dtype, const std::vector<int64_t>& shape,
                            const T* values, int64_t count, int64_t max_bytes, bool broadcast);

/// The bytes of a tensor on the CPU (made contiguous), row-major and little-endian.
std::string TensorBytes(const at::Tensor& tensor);

}  // namespace est::serving
