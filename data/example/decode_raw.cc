// DecodeRaw: bytes as consecutive numbers, as tf.io.decode_raw.

#include <ATen/ops/empty.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "common/error.h"
#include "data/example.h"
#include "data/example/feature_values.h"

namespace est::data {

at::Tensor BytesAsUint8(std::string_view bytes) {
  at::Tensor tensor = at::empty({static_cast<int64_t>(bytes.size())}, at::kByte);
  std::copy(bytes.begin(), bytes.end(), static_cast<char*>(tensor.data_ptr()));
  return tensor;
}

BytesDecoder DecodeRaw(at::ScalarType dtype, std::vector<int64_t> shape, bool little_endian) {
  EST_CHECK(at::isIntegralType(dtype, /*includeBool=*/false) || at::isFloatingType(dtype), ConfigError,
            "DecodeRaw: dtype ", dtype, " is not a plain integer or floating type");
  int inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      EST_CHECK(inferred < 0, ConfigError, "DecodeRaw: shape ", DescribeShape(shape), " has more than one -1");
      inferred = static_cast<int>(i);
    } else {
      EST_CHECK(shape[i] >= 0, ConfigError, "DecodeRaw: shape ", DescribeShape(shape),
                " has a size below -1; expected sizes >= 0 and at most one -1");
      known *= shape[i];
    }
  }
  const auto item_bytes = static_cast<int64_t>(c10::elementSize(dtype));
  const bool swap = little_endian != (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) && item_bytes > 1;
  return [dtype, shape, inferred, known, item_bytes, swap](std::string_view bytes) {
    const auto size = static_cast<int64_t>(bytes.size());
    std::vector<int64_t> sizes = shape;
    if (inferred >= 0) {
      EST_CHECK(known > 0 && size % (known * item_bytes) == 0, DataError, "DecodeRaw: ", size, " bytes do not fill ",
                dtype, " values of shape ", DescribeShape(shape));
      sizes[inferred] = size / (known * item_bytes);
    } else {
      EST_CHECK(size == known * item_bytes, DataError, "DecodeRaw: ", size, " bytes, but ", known, " ", dtype,
                " values of shape ", DescribeShape(shape), " take ", known * item_bytes);
    }
    at::Tensor tensor = at::empty(sizes, dtype);
    auto* out = static_cast<char*>(tensor.data_ptr());
    std::memcpy(out, bytes.data(), bytes.size());
    if (swap) {
      for (int64_t at = 0; at < size; at += item_bytes) std::reverse(out + at, out + at + item_bytes);
    }
    return tensor;
  };
}

}  // namespace est::data
