#include "checkpoint/string_tensor.h"

#include <catch2/catch.hpp>

#include "common/crc32c.h"
#include "common/error.h"

using namespace est::checkpoint;

namespace {

std::string Concatenated(const StringTensorLayout& layout, const std::vector<std::string_view>& elements) {
  std::string bytes = layout.lengths_and_checksum;
  for (std::string_view element : elements) bytes.append(element);
  return bytes;
}

}  // namespace

TEST_CASE("string tensors have TensorFlow's layout and checksums", "[checkpoint]") {
  const std::vector<std::string_view> elements = {"a", "bc"};
  const StringTensorLayout layout = LayOutStringTensor(elements);
  // The lengths are checksummed as little-endian uint32 values, not as their varints.
  const uint32_t lengths[2] = {1, 2};
  const uint32_t lengths_crc = est::crc32c::Value(lengths, sizeof(lengths));
  const uint32_t masked = est::crc32c::Mask(lengths_crc);
  const std::string checksum(reinterpret_cast<const char*>(&masked), 4);
  CHECK(layout.lengths_and_checksum == std::string("\x01\x02", 2) + checksum);
  CHECK(layout.size == 2 + 4 + 3);
  CHECK(layout.crc32c == est::crc32c::Extend(est::crc32c::Extend(lengths_crc, checksum.data(), 4), "abc", 3));
}

TEST_CASE("string tensors round-trip, long and binary elements included", "[checkpoint]") {
  const std::string long_element(300, 'x');  // a two-byte varint length
  const std::string binary("\0\xff\n", 3);
  const std::vector<std::string_view> elements = {"", long_element, binary, "tf"};
  const StringTensorLayout layout = LayOutStringTensor(elements);
  const std::string bytes = Concatenated(layout, elements);
  CHECK(bytes.size() == layout.size);
  CHECK(DecodeStringTensor(bytes, 4, layout.crc32c, "t") ==
        std::vector<std::string>{"", long_element, binary, "tf"});
  const StringTensorLayout empty = LayOutStringTensor({});
  CHECK(DecodeStringTensor(empty.lengths_and_checksum, 0, empty.crc32c, "t").empty());
}

TEST_CASE("a damaged string tensor is rejected, named as the caller says", "[checkpoint]") {
  const std::vector<std::string_view> elements = {"state", "of", "the optimizer"};
  const StringTensorLayout layout = LayOutStringTensor(elements);
  const std::string bytes = Concatenated(layout, elements);
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(~damaged[i]);
    CHECK_THROWS_WITH(DecodeStringTensor(damaged, 3, layout.crc32c, "blob 'x'"),
                      Catch::Contains("blob 'x'"));
  }
  for (size_t length = 0; length < bytes.size(); ++length) {
    CHECK_THROWS_AS(DecodeStringTensor(bytes.substr(0, length), 3, layout.crc32c, "t"),
                    est::CheckpointError);
  }
  CHECK_THROWS_AS(DecodeStringTensor(bytes + "!", 3, layout.crc32c, "t"), est::CheckpointError);
  CHECK_THROWS_WITH(DecodeStringTensor(bytes, 3, layout.crc32c + 1, "t"), Catch::Contains("CRC32C"));
  CHECK_THROWS_AS(DecodeStringTensor(bytes, 1u << 30, layout.crc32c, "t"), est::CheckpointError);
}
