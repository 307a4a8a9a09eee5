#include "checkpoint/string_tensor.h"

#include <google/protobuf/io/coded_stream.h>

#include <limits>

#include "common/crc32c.h"
#include "common/error.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "string lengths are checksummed little-endian as they lie in memory");

namespace est::checkpoint {
namespace {

using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;

/// The most bytes a varint of 64 bits takes (7 bits a byte).
constexpr size_t kMaxVarint64Bytes = 10;

/// Extends `crc` by the length of one element as TensorFlow checksums it.
uint32_t ExtendByLength(uint32_t crc, uint64_t length) {
  if (length <= std::numeric_limits<uint32_t>::max()) {
    const auto narrow = static_cast<uint32_t>(length);
    return crc32c::Extend(crc, &narrow, sizeof(narrow));
  }
  return crc32c::Extend(crc, &length, sizeof(length));
}

uint32_t LoadLittleEndian32(std::string_view bytes) {
  uint32_t value = 0;
  for (size_t i = 0; i < sizeof(value); ++i)
    value |= uint32_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  return value;
}

}  // namespace

StringTensorLayout LayOutStringTensor(const std::vector<std::string_view>& elements) {
  StringTensorLayout layout;
  uint32_t crc = 0;
  uint8_t varint[kMaxVarint64Bytes];
  for (std::string_view element : elements) {
    const uint8_t* end = CodedOutputStream::WriteVarint64ToArray(element.size(), varint);
    layout.lengths_and_checksum.append(reinterpret_cast<const char*>(varint),
                                       static_cast<size_t>(end - varint));
    crc = ExtendByLength(crc, element.size());
  }
  const uint32_t lengths_checksum = crc32c::Mask(crc);
  layout.lengths_and_checksum.append(reinterpret_cast<const char*>(&lengths_checksum),
                                     sizeof(lengths_checksum));
  crc = crc32c::Extend(crc, &lengths_checksum, sizeof(lengths_checksum));
  layout.size = layout.lengths_and_checksum.size();
  for (std::string_view element : elements) {
    crc = crc32c::Extend(crc, element.data(), element.size());
    layout.size += element.size();
  }
  layout.crc32c = crc;
  return layout;
}

std::vector<std::string> DecodeStringTensor(std::string_view bytes, uint64_t num_elements,
                                            uint32_t crc32c, const std::string& what) {
  EST_CHECK(num_elements <= bytes.size(), CheckpointError, what, " holds ", bytes.size(),
            " bytes, too few for ", num_elements, " strings");
  EST_CHECK(bytes.size() <= static_cast<size_t>(std::numeric_limits<int>::max()), CheckpointError,
            what, " holds ", bytes.size(), " bytes, more than a string tensor can have here");
  CodedInputStream input(reinterpret_cast<const uint8_t*>(bytes.data()),
                         static_cast<int>(bytes.size()));
  std::vector<uint64_t> lengths(num_elements);
  uint32_t crc = 0;
  uint64_t total = 0;
  for (uint64_t& length : lengths) {
    EST_CHECK(input.ReadVarint64(&length) && length <= bytes.size() - total, CheckpointError, what,
              " is not a string tensor: its element lengths are cut off or exceed its ",
              bytes.size(), " bytes");
    total += length;
    crc = ExtendByLength(crc, length);
  }
  const auto lengths_end = static_cast<size_t>(input.CurrentPosition());
  EST_CHECK(bytes.size() - lengths_end >= sizeof(uint32_t) &&
                bytes.size() - lengths_end - sizeof(uint32_t) == total,
            CheckpointError, what, " is not a string tensor: ", bytes.size(),
            " bytes do not hold its lengths, their checksum and ", total, " bytes of strings");
  const uint32_t stored_checksum = LoadLittleEndian32(bytes.substr(lengths_end));
  EST_CHECK(stored_checksum == crc32c::Mask(crc), CheckpointError, what,
            " fails the CRC32C check of its string lengths");
  crc = crc32c::Extend(crc, bytes.data() + lengths_end, sizeof(uint32_t));
  std::vector<std::string> elements;
  elements.reserve(num_elements);
  size_t position = lengths_end + sizeof(uint32_t);
  for (uint64_t length : lengths) {
    elements.emplace_back(bytes.substr(position, length));
    position += length;
  }
  crc = crc32c::Extend(crc, bytes.data() + lengths_end + sizeof(uint32_t), total);
  EST_CHECK(crc == crc32c, CheckpointError, what, " fails its CRC32C check (computed ", crc,
            ", recorded ", crc32c, ")");
  return elements;
}

}  // namespace est::checkpoint
