#include "checkpoint/leveldb_table.h"

#include <catch2/catch.hpp>

#include "common/error.h"

using namespace est::checkpoint;

namespace {

std::map<std::string, std::string> SampleEntries() {
  return {{"", "header"},
          {std::string("\0slice", 6), "a slice"},
          {"dense/kernel", std::string(5000, 'k')},  // more than one 4 KiB block
          {"global_step", "8 bytes!"},
          {"z", ""}};
}

}  // namespace

TEST_CASE("a table round-trips its entries in bytewise key order", "[checkpoint]") {
  const auto entries = SampleEntries();
  const std::string bytes = EncodeTable(entries);
  CHECK(HasTableMagic(bytes));
  const auto decoded = DecodeTable(bytes, "x.index");
  CHECK(decoded == std::vector<std::pair<std::string, std::string>>(entries.begin(), entries.end()));
}

TEST_CASE("the table ends with LevelDB's footer magic, little-endian", "[checkpoint]") {
  const std::string bytes = EncodeTable({{"a", "b"}});
  CHECK(bytes.substr(bytes.size() - 8) == "\x57\xfb\x80\x8b\x24\x75\x47\xdb");
  CHECK_FALSE(HasTableMagic(bytes.substr(0, bytes.size() - 1)));
  CHECK_FALSE(HasTableMagic("short"));
}

TEST_CASE("an empty table round-trips", "[checkpoint]") {
  CHECK(DecodeTable(EncodeTable({}), "x.index").empty());
}

TEST_CASE("a table cut short anywhere is rejected, naming the file", "[checkpoint]") {
  const std::string bytes = EncodeTable(SampleEntries());
  for (size_t length = 0; length < bytes.size(); length += 7) {
    INFO(length);
    // Without its magic, the cut table is no table: the footer check in Table::Open fails.
    CHECK_THROWS_WITH(DecodeTable(bytes.substr(0, length), "/d/model.ckpt-1.index"),
                      Catch::Contains("/d/model.ckpt-1.index"));
  }
}

TEST_CASE("a flipped byte in a block fails its checksum", "[checkpoint]") {
  const std::string bytes = EncodeTable(SampleEntries());
  std::string damaged = bytes;
  damaged[20] = static_cast<char>(~damaged[20]);  // inside the first data block
  CHECK_THROWS_AS(DecodeTable(damaged, "x.index"), est::CheckpointError);
}
