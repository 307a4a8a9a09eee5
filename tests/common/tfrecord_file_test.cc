#include "common/tfrecord_file.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/crc32c.h"
#include "common/error.h"
#include "common/file_util.h"
#include "common/tfrecord.h"
#include "tests/test_util.h"

using namespace est;
using est::testing::FreshTempDir;
namespace fs = std::filesystem;

namespace {

void WriteBytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::vector<std::string> ReadAll(tfrecord::RecordFileReader& reader) {
  std::vector<std::string> records;
  std::string record;
  while (reader.next(&record)) records.push_back(record);
  return records;
}

}  // namespace

TEST_CASE("tfrecord: the file writer's bytes are FrameRecord's, one record after another", "[tfrecord]") {
  const fs::path path = FreshTempDir("tfrecord_writer") / "records";
  {
    auto writer = tfrecord::RecordFileWriter::CreateNew(path.string());
    REQUIRE(writer != nullptr);
    writer->append("first");
    writer->append("");
    writer->sync();
  }
  {
    auto writer = tfrecord::RecordFileWriter::OpenForAppend(path.string());
    writer->append("third");
  }
  CHECK(ReadFile(path.string()) ==
        tfrecord::FrameRecord("first") + tfrecord::FrameRecord("") + tfrecord::FrameRecord("third"));
  CHECK(tfrecord::RecordFileWriter::CreateNew(path.string()) == nullptr);
  CHECK_THROWS_AS(tfrecord::RecordFileWriter::CreateNew((path.parent_path() / "no" / "dir").string()), IoError);
}

TEST_CASE("tfrecord: the file reader returns every record and its offset", "[tfrecord]") {
  const fs::path path = FreshTempDir("tfrecord_reader") / "records";
  const std::string bytes =
      tfrecord::FrameRecord("first") + tfrecord::FrameRecord("") + tfrecord::FrameRecord("third");
  WriteBytes(path, bytes);
  tfrecord::RecordFileReader reader(path.string());
  std::string record;
  REQUIRE(reader.next(&record));
  CHECK(record == "first");
  CHECK(reader.offset() == 16 + 5);
  REQUIRE(reader.next(&record));
  CHECK(record.empty());
  REQUIRE(reader.next(&record));
  CHECK(record == "third");
  CHECK_FALSE(reader.next(&record));
  CHECK_FALSE(reader.truncated());
  CHECK(reader.offset() == bytes.size());
}

TEST_CASE("tfrecord: the file reader streams records larger and smaller than its buffer", "[tfrecord]") {
  // 3 MiB records cross the 1 MiB read buffer; the small ones between them come from it.
  const fs::path path = FreshTempDir("tfrecord_stream") / "records";
  std::vector<std::string> written;
  std::string bytes;
  for (int i = 0; i < 40; ++i) {
    const size_t size = i % 8 == 3 ? (3u << 20) + static_cast<size_t>(i) : static_cast<size_t>(i * 37);
    std::string data(size, '\0');
    for (size_t j = 0; j < size; ++j) data[j] = static_cast<char>((j * 131 + static_cast<size_t>(i)) & 0xff);
    bytes += tfrecord::FrameRecord(data);
    written.push_back(std::move(data));
  }
  WriteBytes(path, bytes);
  tfrecord::RecordFileReader reader(path.string());
  CHECK(ReadAll(reader) == written);
  CHECK_FALSE(reader.truncated());
  CHECK(reader.offset() == bytes.size());
}

TEST_CASE("tfrecord: the file reader stops quietly at a last record cut short", "[tfrecord]") {
  const fs::path dir = FreshTempDir("tfrecord_cut");
  const std::string whole = tfrecord::FrameRecord("complete");
  const std::string last = tfrecord::FrameRecord("being appended");
  for (size_t cut = 1; cut < last.size(); ++cut) {
    const fs::path path = dir / ("cut" + std::to_string(cut));
    WriteBytes(path, whole + last.substr(0, cut));
    tfrecord::RecordFileReader reader(path.string());
    CAPTURE(cut);
    CHECK(ReadAll(reader) == std::vector<std::string>{"complete"});
    CHECK(reader.truncated());
    CHECK(reader.offset() == whole.size());
  }
}

TEST_CASE("tfrecord: a length past the end of the file allocates nothing and reads as cut short", "[tfrecord]") {
  // A header announcing 2^60 bytes, its checksum valid: believed only up to the file's size.
  std::string header(8, '\0');
  header[7] = 0x10;
  const uint32_t crc = crc32c::Mask(crc32c::Value(header));
  for (int i = 0; i < 4; ++i) header.push_back(static_cast<char>(crc >> (8 * i)));
  const fs::path path = FreshTempDir("tfrecord_huge") / "records";
  WriteBytes(path, tfrecord::FrameRecord("x") + header + "some bytes");
  tfrecord::RecordFileReader reader(path.string());
  CHECK(ReadAll(reader) == std::vector<std::string>{"x"});
  CHECK(reader.truncated());
}

TEST_CASE("tfrecord: the file reader names the file and offset of a corrupted record", "[tfrecord]") {
  const fs::path dir = FreshTempDir("tfrecord_corrupt");
  const std::string first = tfrecord::FrameRecord("intact");
  const std::string second = tfrecord::FrameRecord("payload");
  const std::string offset = std::to_string(first.size());
  auto second_fails_with = [&](std::string bytes, const std::string& name, const std::string& what) {
    const fs::path path = dir / name;
    WriteBytes(path, bytes);
    tfrecord::RecordFileReader reader(path.string());
    std::string record;
    REQUIRE(reader.next(&record));
    CHECK(record == "intact");
    CHECK_THROWS_AS(reader.next(&record), DataError);
    tfrecord::RecordFileReader again(path.string());
    REQUIRE(again.next(&record));
    CHECK_THROWS_WITH(again.next(&record), Catch::Matchers::Contains(path.string()) &&
                                               Catch::Matchers::Contains("offset " + offset) &&
                                               Catch::Matchers::Contains(what));
  };
  SECTION("a flipped data byte") {
    std::string bytes = first + second + tfrecord::FrameRecord("after");
    bytes[first.size() + tfrecord::kHeaderSize + 2] ^= 0x20;
    second_fails_with(bytes, "data", "data");
  }
  SECTION("a flipped length byte") {
    std::string bytes = first + second;
    bytes[first.size()] ^= 0x01;
    second_fails_with(bytes, "length", "length");
  }
  SECTION("a flipped checksum byte") {
    std::string bytes = first + second;
    bytes.back() ^= 0x80;
    second_fails_with(bytes, "checksum", "data");
  }
}

TEST_CASE("tfrecord: the file reader names a missing file and a directory", "[tfrecord]") {
  const fs::path dir = FreshTempDir("tfrecord_missing");
  CHECK_THROWS_AS(tfrecord::RecordFileReader((dir / "absent").string()), IoError);
  CHECK_THROWS_WITH(tfrecord::RecordFileReader((dir / "absent").string()),
                    Catch::Matchers::Contains((dir / "absent").string()));
  CHECK_THROWS_AS(tfrecord::RecordFileReader(dir.string()), IoError);
}
