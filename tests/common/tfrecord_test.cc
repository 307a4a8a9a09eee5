#include "common/tfrecord.h"

#include <catch2/catch.hpp>
#include <string>

#include "common/crc32c.h"

using namespace est;

namespace {

/// The spec's masked CRC, written out here rather than taken from crc32c::Mask.
uint32_t SpecMaskedCrc(std::string_view bytes) {
  const uint32_t crc = crc32c::Value(bytes);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

void AppendLittleEndian(std::string* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>(value >> (8 * i)));
}

std::string Bytes(std::initializer_list<unsigned char> bytes) {
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace

TEST_CASE("tfrecord: FrameRecord lays out length, masked CRCs and data as the spec says", "[tfrecord]") {
  const std::string data = "some event bytes \x01\x02";
  std::string expected;
  AppendLittleEndian(&expected, data.size(), 8);
  AppendLittleEndian(&expected, SpecMaskedCrc(expected), 4);
  expected += data;
  AppendLittleEndian(&expected, SpecMaskedCrc(data), 4);
  CHECK(tfrecord::FrameRecord(data) == expected);
}

TEST_CASE("tfrecord: FrameRecord matches the bytes of TensorBoard's own RecordWriter", "[tfrecord]") {
  // TensorBoard's tensorboard.summary.writer.record_writer.RecordWriter framing b"hello" and b"".
  CHECK(tfrecord::FrameRecord("hello") ==
        Bytes({0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xea, 0xb2, 0x04,
               0x3e, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0xbb, 0x1f, 0x1c, 0x19}));
  CHECK(tfrecord::FrameRecord("") == Bytes({0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x29, 0x03, 0x98,
                                            0x07, 0xd8, 0xea, 0x82, 0xa2}));
}
