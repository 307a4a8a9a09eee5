/// libFuzzer harness for the TFRecord reader: the input's first byte picks the compression
/// (its value mod 3: none, GZIP, ZLIB), whether corrupt records are skipped (bit 2), whether
/// checksums are checked (bit 3) and a small buffer (bit 4); the rest is the file. Every
/// record is read, then the file again with skip() of the first half. A DataError is the
/// expected answer to bad bytes; any other exception, a crash or a sanitizer report is a bug.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.h"
#include "data/tfrecord.h"
#include "tests/fuzz/fuzz_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size == 0) return 0;
  const uint8_t flags = bytes[0];
  const std::string path = est::fuzz::ScratchDir() + "/records.tfrecord";
  est::fuzz::WriteBytes(path, std::string_view(reinterpret_cast<const char*>(bytes) + 1, size - 1));
  const auto options = est::data::TFRecordReaderOptions()
                           .compression(static_cast<est::data::TFRecordCompression>(flags % 3))
                           .skip_corrupt_records((flags & 4) != 0)
                           .verify_checksums((flags & 8) == 0)
                           .buffer_bytes((flags & 16) != 0 ? 7 : 4096);
  int64_t records = 0;
  try {
    est::data::TFRecordReader reader(path, options);
    std::string record;
    while (reader.next(&record)) ++records;
  } catch (const est::DataError&) {
  }
  try {
    est::data::TFRecordReader reader(path, options);
    reader.skip(records / 2);
    std::string record;
    while (reader.next(&record)) {
    }
  } catch (const est::DataError&) {
  }
  return 0;
}
