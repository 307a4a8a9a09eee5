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

TEST_CASE("a block handle pointing outside the table is refused before LevelDB allocates it", "[checkpoint]") {
  // LevelDB allocates a block's size before reading it: a damaged footer claiming a 3.4 GB index
  // block, or an index entry claiming a huge data block, must fail here, not exhaust memory.
  const auto varint = [](uint64_t value) {
    std::string out;
    for (; value >= 0x80; value >>= 7) out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    out.push_back(static_cast<char>(value));
    return out;
  };
  const auto with_footer = [&](std::string blocks, const std::string& handles) {
    std::string footer = handles;
    footer.resize(40, '\0');
    for (int i = 0; i < 8; ++i) footer.push_back(static_cast<char>((0xdb4775248b80fb57ull >> (8 * i)) & 0xff));
    return blocks + footer;
  };
  const std::string huge_index =
      with_footer(std::string(100, '\0'), varint(0) + varint(8) + varint(0) + varint(3400000000u));
  CHECK_THROWS_WITH(DecodeTable(huge_index, "x.index"), Catch::Contains("a block handle points outside the file"));
  // An index block whose one entry (key "k") points at a data block of 3.4 GB.
  const std::string handle = varint(0) + varint(3400000000u);
  std::string index = varint(0) + varint(1) + varint(handle.size()) + "k" + handle;
  index.append(std::string("\0\0\0\0\x01\0\0\0", 8));  // restart 0; one restart
  const std::string blocks = index + std::string(5, '\0');
  const std::string huge_data =
      with_footer(blocks, varint(0) + varint(index.size()) + varint(0) + varint(index.size()));
  CHECK_THROWS_WITH(DecodeTable(huge_data, "x.index"), Catch::Contains("a block handle points outside the file"));
}
