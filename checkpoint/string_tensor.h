#pragma once
/// TensorFlow's layout of a DT_STRING tensor in a tensor bundle's data file:
///   [varint64 length of each element][4 bytes: masked CRC32C of the lengths][the elements]
/// The CRC32C a bundle entry records for such a tensor (masked in the entry) covers the
/// lengths as little-endian uint32 values (uint64 for an element of 4 GiB or more, not the
/// varints), then the 4 checksum bytes, then the elements' bytes.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace est::checkpoint {

/// What precedes the elements of a string tensor, and its entry's (unmasked) CRC32C.
struct StringTensorLayout {
  /// The varint lengths and their masked checksum: write these, then every element.
  std::string lengths_and_checksum;
  /// The CRC32C over what TensorFlow checksums (see above); Mask it into the entry.
  uint32_t crc32c = 0;
  /// Bytes in the data file: lengths_and_checksum and every element.
  uint64_t size = 0;
};

/// The layout of a string tensor holding `elements` in row-major order.
StringTensorLayout LayOutStringTensor(const std::vector<std::string_view>& elements);

/// The `num_elements` elements stored in `bytes`, checked against the lengths' checksum and
/// the entry's unmasked `crc32c`. Throws CheckpointError beginning with `what` (the data
/// file and the tensor) when the bytes are not such a tensor or fail a checksum.
std::vector<std::string> DecodeStringTensor(std::string_view bytes, uint64_t num_elements,
                                            uint32_t crc32c, const std::string& what);

}  // namespace est::checkpoint
