#include "checkpoint/tensor_bundle_index.h"

#include <catch2/catch.hpp>

#include "checkpoint/leveldb_table.h"
#include "common/error.h"

using namespace est::checkpoint;

namespace {

proto::BundleEntryProto Entry(int64_t offset) {
  proto::BundleEntryProto entry;
  entry.set_dtype(proto::DT_FLOAT);
  entry.mutable_shape()->add_dim()->set_size(4);
  entry.set_offset(offset);
  entry.set_size(16);
  entry.set_crc32c(0x12345678);
  return entry;
}

std::string IndexWithHeader(const proto::BundleHeaderProto& header) {
  return EncodeTable({{"", header.SerializeAsString()}, {"w", Entry(0).SerializeAsString()}});
}

proto::BundleHeaderProto ValidHeader() {
  proto::BundleHeaderProto header;
  header.set_num_shards(1);
  header.mutable_version()->set_producer(1);
  return header;
}

}  // namespace

TEST_CASE("the bundle index round-trips its header and entries in key order", "[checkpoint]") {
  const std::string bytes = EncodeBundleIndex({{"w", Entry(64)}, {"b", Entry(0)}}, 1);
  const TensorBundleIndex index = DecodeBundleIndex(bytes, "x.index");
  CHECK(index.header.num_shards() == 1);
  CHECK(index.header.endianness() == proto::BundleHeaderProto::LITTLE);
  CHECK(index.header.version().producer() == kTensorBundleVersion);
  REQUIRE(index.entries.size() == 2);
  CHECK(index.entries[0].first == "b");
  CHECK(index.entries[1].first == "w");
  CHECK(index.entries[1].second.offset() == 64);
  CHECK(index.entries[1].second.crc32c() == 0x12345678u);
}

TEST_CASE("the header is the table's first entry, under the empty key", "[checkpoint]") {
  const auto table = DecodeTable(EncodeBundleIndex({{"a", Entry(0)}}, 1), "x.index");
  REQUIRE(table.size() == 2);
  CHECK(table[0].first.empty());
  proto::BundleHeaderProto header;
  CHECK(header.ParseFromString(table[0].second));
}

TEST_CASE("an index without a valid header is rejected, naming the file", "[checkpoint]") {
  CHECK_THROWS_WITH(DecodeBundleIndex(EncodeTable({{"w", Entry(0).SerializeAsString()}}), "/d/a.index"),
                    Catch::Contains("/d/a.index") && Catch::Contains("header"));
  CHECK_THROWS_WITH(DecodeBundleIndex(EncodeTable({{"", "\xff\xff"}}), "/d/a.index"),
                    Catch::Contains("/d/a.index") && Catch::Contains("BundleHeaderProto"));
  proto::BundleHeaderProto big_endian = ValidHeader();
  big_endian.set_endianness(proto::BundleHeaderProto::BIG);
  CHECK_THROWS_WITH(DecodeBundleIndex(IndexWithHeader(big_endian), "a.index"), Catch::Contains("big-endian"));
  proto::BundleHeaderProto no_shards = ValidHeader();
  no_shards.set_num_shards(0);
  CHECK_THROWS_WITH(DecodeBundleIndex(IndexWithHeader(no_shards), "a.index"), Catch::Contains("0 data files"));
  proto::BundleHeaderProto newer = ValidHeader();
  newer.mutable_version()->set_min_consumer(2);
  CHECK_THROWS_WITH(DecodeBundleIndex(IndexWithHeader(newer), "a.index"), Catch::Contains("version 2"));
  proto::BundleHeaderProto excluded = ValidHeader();
  excluded.mutable_version()->add_bad_consumers(1);
  CHECK_THROWS_AS(DecodeBundleIndex(IndexWithHeader(excluded), "a.index"), est::CheckpointError);
}

TEST_CASE("an entry that is not a BundleEntryProto is rejected, naming it", "[checkpoint]") {
  const std::string bytes =
      EncodeTable({{"", ValidHeader().SerializeAsString()}, {"w", std::string("\xff\xff\xff", 3)}});
  CHECK_THROWS_WITH(DecodeBundleIndex(bytes, "a.index"), Catch::Contains("'w'") && Catch::Contains("a.index"));
}
