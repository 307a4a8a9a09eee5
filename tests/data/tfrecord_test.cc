// TFRecord files: records round-trip through every compression; our GZIP and ZLIB files are
// what Python's gzip and zlib read (and we read theirs); corrupt and cut-short files are
// DataErrors naming the file, the record and its offset, or skipped and counted on request;
// skip() moves by headers; the writer publishes whole files only and never overwrites.

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/file_util.h"
#include "data/tfrecord.h"
#include "tests/log_capture.h"
#include "tests/test_util.h"

// The file's own names, apart from those of the tests compiled with it in one unit.
namespace tfrecord_test {
namespace fs = std::filesystem;
using est::data::TFRecordCompression;
using est::data::TFRecordReader;
using est::data::TFRecordReaderOptions;
using est::data::TFRecordWriter;

namespace {

// An empty record, a one-byte one, 300 short ones and a 3 MB one of random bytes.
std::vector<std::string> SampleRecords() {
  std::vector<std::string> records = {"", "x"};
  for (int i = 0; i < 300; ++i) records.push_back("record " + std::to_string(i));
  std::mt19937 random(7);
  std::string big(3 << 20, '\0');
  for (char& c : big) c = static_cast<char>(random());
  records.push_back(big);
  return records;
}

void Write(const std::string& path, const std::vector<std::string>& records,
           TFRecordCompression compression = TFRecordCompression::kNone) {
  TFRecordWriter writer(path, compression);
  for (const auto& record : records) writer.write(record);
  writer.close();
}

std::vector<std::string> ReadAll(const std::string& path, TFRecordReaderOptions options = {}) {
  TFRecordReader reader(path, options);
  std::vector<std::string> records;
  std::string record;
  while (reader.next(&record)) records.push_back(record);
  return records;
}

// Byte offset of record `index` in a plain file of `records`.
uint64_t OffsetOf(const std::vector<std::string>& records, size_t index) {
  uint64_t offset = 0;
  for (size_t i = 0; i < index; ++i) offset += 16 + records[i].size();
  return offset;
}

int Python(const std::string& code) { return std::system(("python3 -c '" + code + "'").c_str()); }

}  // namespace

TEST_CASE("TFRecord files round-trip their records in every compression", "[data]") {
  const fs::path dir = est::testing::FreshTempDir("tfrecord_roundtrip");
  const auto records = SampleRecords();
  for (auto compression : {TFRecordCompression::kNone, TFRecordCompression::kGzip, TFRecordCompression::kZlib}) {
    const std::string name = est::data::TFRecordCompressionName(compression);
    DYNAMIC_SECTION(name) {
      const std::string path = (dir / ("records." + name)).string();
      Write(path, records, compression);
      // A small buffer: records and headers straddle every refill.
      const auto read = ReadAll(path, TFRecordReaderOptions().compression(compression).buffer_bytes(1000));
      CHECK(read == records);
      // skip() moves by headers and lands where reading would have.
      TFRecordReader reader(path, TFRecordReaderOptions().compression(compression));
      CHECK(reader.skip(250) == 250);
      std::string record;
      REQUIRE(reader.next(&record));
      CHECK(record == records[250]);
      CHECK(reader.record_number() == 251);
      CHECK(reader.skip(1000) == static_cast<int64_t>(records.size()) - 251);
      CHECK_FALSE(reader.next(&record));
    }
  }
}

TEST_CASE("records read as views into the reader's buffer equal the records at every buffer size", "[data]") {
  const fs::path dir = est::testing::FreshTempDir("tfrecord_views");
  const auto records = SampleRecords();
  for (auto compression : {TFRecordCompression::kNone, TFRecordCompression::kGzip}) {
    const std::string path = (dir / ("records." + est::data::TFRecordCompressionName(compression))).string();
    Write(path, records, compression);
    // 1 and 13: no header or record fits the buffer; 1000: some fit, the 3 MB one spills; the
    // default: all but the 3 MB one are views, and headers straddle refills.
    for (int64_t buffer : {int64_t{1}, int64_t{13}, int64_t{1000}, TFRecordReaderOptions().buffer_bytes()}) {
      DYNAMIC_SECTION(est::data::TFRecordCompressionName(compression) << " buffer " << buffer) {
        TFRecordReader reader(path, TFRecordReaderOptions().compression(compression).buffer_bytes(buffer));
        std::string_view view;
        size_t index = 0;
        for (; reader.next(&view); ++index) {
          REQUIRE(index < records.size());
          CHECK(view == records[index]);  // checked before the next call, as the view's life allows
          if (index == 10) {
            CHECK(reader.skip(5) == 5);
            index += 5;
          }
        }
        CHECK(index == records.size());
      }
    }
  }
}

TEST_CASE("our GZIP and ZLIB TFRecord files are what Python's gzip and zlib read, and theirs read here", "[data]") {
  const fs::path dir = est::testing::FreshTempDir("tfrecord_python");
  const auto records = SampleRecords();
  const std::string plain = (dir / "plain").string();
  Write(plain, records);
  Write((dir / "ours.gz").string(), records, TFRecordCompression::kGzip);
  Write((dir / "ours.zlib").string(), records, TFRecordCompression::kZlib);
  const std::string d = dir.string() + "/";
  // Inflated by Python, our files are the plain file byte for byte.
  CHECK(Python("import gzip, zlib; p = open(\"" + d + "plain\", \"rb\").read(); "
               "assert gzip.decompress(open(\"" + d + "ours.gz\", \"rb\").read()) == p; "
               "assert zlib.decompress(open(\"" + d + "ours.zlib\", \"rb\").read()) == p") == 0);
  // Files Python compresses (two gzip members, as concatenated files have) read here.
  REQUIRE(Python("import gzip, zlib; p = open(\"" + d + "plain\", \"rb\").read(); h = len(p) // 2; "
                 "open(\"" + d + "theirs.gz\", \"wb\").write(gzip.compress(p[:h]) + gzip.compress(p[h:])); "
                 "open(\"" + d + "theirs.zlib\", \"wb\").write(zlib.compress(p, 9))") == 0);
  CHECK(ReadAll(d + "theirs.gz", TFRecordReaderOptions().compression(TFRecordCompression::kGzip)) == records);
  CHECK(ReadAll(d + "theirs.zlib", TFRecordReaderOptions().compression(TFRecordCompression::kZlib)) == records);
}

TEST_CASE("corrupt and cut-short TFRecord files name the file, the record and its offset", "[data]") {
  const fs::path dir = est::testing::FreshTempDir("tfrecord_corrupt");
  const auto records = SampleRecords();
  const std::string path = (dir / "records").string();
  Write(path, records);
  std::string bytes = est::ReadFile(path);
  auto rewrite = [&](const std::string& name, const std::string& contents) {
    const std::string changed = (dir / name).string();
    std::ofstream(changed, std::ios::binary) << contents;
    return changed;
  };
  const uint64_t third = OffsetOf(records, 3);

  SECTION("a record's data") {
    std::string damaged = bytes;
    damaged[third + 12] ^= 0x20;  // the first data byte of record 3
    const std::string file = rewrite("data", damaged);
    CHECK_THROWS_MATCHES(ReadAll(file), est::DataError,
                         est::testing::MessageMatches(Catch::Contains("TFRecord file '" + file + "': record 3 at byte " +
                                                                      std::to_string(third)) &&
                                                      Catch::Contains("the data's checksum does not match")));
    est::testing::LogCapture log(20);
    TFRecordReader reader(file, TFRecordReaderOptions().skip_corrupt_records(true));
    std::vector<std::string> read;
    std::string record;
    while (reader.next(&record)) read.push_back(record);
    std::vector<std::string> expected = records;
    expected.erase(expected.begin() + 3);
    CHECK(read == expected);
    CHECK(reader.corrupt_records() == 1);
    CHECK_THAT(log.text(), Catch::Contains("record 3 at byte " + std::to_string(third)) &&
                               Catch::Contains("1 corrupt record(s) skipped in this file"));
    // Without checksums the damage passes unseen, as TensorFlow's reader without them does.
    CHECK(ReadAll(file, TFRecordReaderOptions().verify_checksums(false)).size() == records.size());
  }
  SECTION("an unchecked length no record can have") {
    std::string damaged = bytes;
    damaged[third + 7] = '\x80';  // the length's top byte: 2^63 and more
    const std::string file = rewrite("huge", damaged);
    CHECK_THROWS_MATCHES(ReadAll(file, TFRecordReaderOptions().verify_checksums(false)), est::DataError,
                         est::testing::MessageMatches(Catch::Contains("record 3 at byte " + std::to_string(third)) &&
                                                      Catch::Contains("more than a record can hold")));
  }
  SECTION("a record's length") {
    std::string damaged = bytes;
    damaged[third] ^= 0x01;
    const std::string file = rewrite("length", damaged);
    CHECK_THROWS_MATCHES(ReadAll(file), est::DataError,
                         est::testing::MessageMatches(Catch::Contains("record 3 at byte " + std::to_string(third)) &&
                                                      Catch::Contains("the length's checksum does not match")));
    TFRecordReader reader(file, TFRecordReaderOptions().skip_corrupt_records(true));
    std::string record;
    int read = 0;
    while (reader.next(&record)) ++read;
    CHECK(read == 3);  // nothing after a corrupt length can be framed
    CHECK(reader.corrupt_records() == 1);
  }
  SECTION("a file cut short inside a record") {
    const std::string file = rewrite("cut", bytes.substr(0, third + 12 + 4));
    CHECK_THROWS_MATCHES(ReadAll(file), est::DataError,
                         est::testing::MessageMatches(Catch::Contains("record 3 at byte " + std::to_string(third)) &&
                                                      Catch::Contains("it is cut short")));
    const std::string in_header = rewrite("cut_header", bytes.substr(0, third + 5));
    CHECK_THROWS_WITH(ReadAll(in_header), Catch::Contains("inside the record's header (5 of 12 bytes)"));
    TFRecordReader skipping(file);
    CHECK_THROWS_WITH(skipping.skip(10), Catch::Contains("record 3") && Catch::Contains("cut short"));
  }
  SECTION("compressed files cut short, or read with the wrong compression") {
    const std::string gz = (dir / "records.gz").string();
    Write(gz, records, TFRecordCompression::kGzip);
    const std::string compressed = est::ReadFile(gz);
    const std::string cut = rewrite("cut.gz", compressed.substr(0, compressed.size() / 2));
    CHECK_THROWS_WITH(ReadAll(cut, TFRecordReaderOptions().compression(TFRecordCompression::kGzip)),
                      Catch::Contains("'" + cut + "': the GZIP stream ends early"));
    CHECK_THROWS_WITH(ReadAll(gz), Catch::Contains("record 0 at byte 0") &&
                                       Catch::Contains("or a compressed one read as plain"));
    CHECK_THROWS_WITH(ReadAll(path, TFRecordReaderOptions().compression(TFRecordCompression::kZlib)),
                      Catch::Contains("is not a valid ZLIB stream") && Catch::Contains("is its compression right?"));
  }
}

TEST_CASE("a TFRecordWriter publishes whole files only and never overwrites one", "[data]") {
  const fs::path dir = est::testing::FreshTempDir("tfrecord_writer");
  const std::string path = (dir / "out.tfrecord").string();
  {
    TFRecordWriter abandoned(path, TFRecordCompression::kGzip);
    abandoned.write("never published");
  }
  CHECK(fs::is_empty(dir));  // neither the file nor its temporary
  Write(path, {"kept"});
  CHECK_THROWS_MATCHES(TFRecordWriter(path), est::IoError,
                       est::testing::MessageMatches(Catch::Contains("'" + path + "' exists already")));
  CHECK(ReadAll(path) == std::vector<std::string>{"kept"});
  CHECK_THROWS_AS(TFRecordReader((dir / "missing").string()), est::IoError);
  CHECK(est::data::ParseTFRecordCompression("gzip") == TFRecordCompression::kGzip);
  CHECK(est::data::ParseTFRecordCompression("") == TFRecordCompression::kNone);
  CHECK_THROWS_WITH(est::data::ParseTFRecordCompression("lz4"),
                    Catch::Contains("'lz4' is not known; expected NONE (or \"\"), GZIP or ZLIB"));
}

}  // namespace tfrecord_test
