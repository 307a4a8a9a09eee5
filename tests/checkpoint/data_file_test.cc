#include "checkpoint/data_file.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "common/crc32c.h"
#include "common/error.h"
#include "common/file_util.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/test_util.h"

using namespace est::checkpoint;
using est::CheckpointError;
using est::testing::FreshTempDir;

TEST_CASE("a data file reads exact extents and checksums them in chunks", "[checkpoint]") {
  auto dir = FreshTempDir("data_file_read");
  const std::string path = (dir / "d").string();
  std::string bytes(3 << 20, '\0');  // more than one chunk of checksum()
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7);
  est::WriteFileAtomic(path, bytes);
  const DataFile file(path);
  CHECK(file.path() == path);
  CHECK(file.size() == bytes.size());
  CHECK(file.contains(0, bytes.size()));
  CHECK(file.contains(bytes.size(), 0));
  CHECK_FALSE(file.contains(1, bytes.size()));
  CHECK_FALSE(file.contains(UINT64_MAX, 2));
  std::string part(10, '\0');
  file.read(100, 10, part.data(), "tensor 'w'");
  CHECK(part == bytes.substr(100, 10));
  CHECK(file.checksum(5, bytes.size() - 5, "tensor 'w'") == est::crc32c::Value(bytes.data() + 5, bytes.size() - 5));
  CHECK(file.checksum(0, 0, "tensor 'w'") == 0);
}

TEST_CASE("a data file names itself and what was read in every error", "[checkpoint]") {
  auto dir = FreshTempDir("data_file_errors");
  const std::string path = (dir / "d").string();
  CHECK_THROWS_WITH(DataFile(path), Catch::Contains(path) && Catch::Contains("cannot be opened"));
  est::WriteFileAtomic(path, "0123456789");
  const DataFile file(path);
  testing::TruncateFile(path, 4);  // shortened after it was opened
  char out[8];
  CHECK_THROWS_WITH(file.read(2, 8, out, "blob 'state'"), Catch::Contains(path) &&
                                                             Catch::Contains("blob 'state'") &&
                                                             Catch::Contains("truncated"));
  CHECK_THROWS_WITH(file.check_crc(1, 2, "tensor 'b'"),
                    Catch::Contains(path) && Catch::Contains("tensor 'b'") && Catch::Contains("CRC32C"));
  CHECK_NOTHROW(file.check_crc(3, 3, "tensor 'b'"));
}

TEST_CASE("a moved data file keeps reading after its file is deleted", "[checkpoint]") {
  auto dir = FreshTempDir("data_file_moved");
  const std::string path = (dir / "d").string();
  est::WriteFileAtomic(path, "payload");
  DataFile first(path);
  const DataFile second(std::move(first));
  std::filesystem::remove(path);
  std::string out(7, '\0');
  second.read(0, 7, out.data(), "blob");
  CHECK(out == "payload");
}
