#include "common/tfrecord.h"

#include "common/crc32c.h"
#include "common/error.h"

namespace est::tfrecord {
namespace {

void AppendFixed32(std::string* out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void AppendFixed64(std::string* out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t DecodeFixed(const char* p, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return value;
}

uint32_t MaskedCrc(const char* data, size_t n) { return crc32c::Mask(crc32c::Value(data, n)); }

}  // namespace

std::string FrameRecord(std::string_view data) {
  std::string record;
  record.reserve(kHeaderSize + data.size() + kFooterSize);
  AppendFixed64(&record, data.size());
  AppendFixed32(&record, MaskedCrc(record.data(), 8));
  record.append(data);
  AppendFixed32(&record, MaskedCrc(data.data(), data.size()));
  return record;
}

uint64_t HeaderLength(const char* header) { return DecodeFixed(header, 8); }

bool HeaderChecksumMatches(const char* header) { return DecodeFixed(header + 8, 4) == MaskedCrc(header, 8); }

bool DataChecksumMatches(std::string_view data, const char* footer) {
  return DecodeFixed(footer, 4) == MaskedCrc(data.data(), data.size());
}

uint64_t DecodeHeader(const char* header, const std::string& source, uint64_t offset) {
  EST_CHECK(HeaderChecksumMatches(header), DataError, "corrupted record in '", source, "' at offset ", offset,
            ": the length's checksum does not match");
  return HeaderLength(header);
}

void CheckData(std::string_view data, const char* footer, const std::string& source, uint64_t offset) {
  EST_CHECK(DataChecksumMatches(data, footer), DataError, "corrupted record in '", source, "' at offset ", offset,
            ": the data's checksum does not match");
}

}  // namespace est::tfrecord
