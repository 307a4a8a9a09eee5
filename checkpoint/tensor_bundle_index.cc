#include "checkpoint/tensor_bundle_index.h"

#include <limits>
#include <map>

#include "checkpoint/leveldb_table.h"
#include "common/error.h"

namespace est::checkpoint {
namespace {

void CheckHeader(const proto::BundleHeaderProto& header, const std::string& index_path) {
  EST_CHECK(header.num_shards() >= 1, CheckpointError, "checkpoint index '", index_path,
            "' describes a bundle of ", header.num_shards(), " data files; expected at least 1");
  EST_CHECK(header.endianness() == proto::BundleHeaderProto::LITTLE, CheckpointError,
            "checkpoint index '", index_path, "' describes a big-endian bundle; this build reads "
            "little-endian ones");
  EST_CHECK(header.version().min_consumer() <= kTensorBundleVersion, CheckpointError,
            "checkpoint index '", index_path, "' needs a reader of bundle version ",
            header.version().min_consumer(), " or later; this build reads version ",
            kTensorBundleVersion);
  for (int bad : header.version().bad_consumers()) {
    EST_CHECK(bad != kTensorBundleVersion, CheckpointError, "checkpoint index '", index_path,
              "' excludes readers of bundle version ", kTensorBundleVersion, ", which this build is");
  }
}

bool ParseValue(const std::string& value, google::protobuf::Message& message) {
  return value.size() <= static_cast<size_t>(std::numeric_limits<int>::max()) &&
         message.ParseFromArray(value.data(), static_cast<int>(value.size()));
}

}  // namespace

std::string EncodeBundleIndex(const std::vector<std::pair<std::string, proto::BundleEntryProto>>& entries,
                              int num_shards) {
  std::map<std::string, std::string> table;
  proto::BundleHeaderProto header;
  header.set_num_shards(num_shards);
  header.set_endianness(proto::BundleHeaderProto::LITTLE);
  header.mutable_version()->set_producer(kTensorBundleVersion);
  table.emplace(kBundleHeaderKey, header.SerializeAsString());
  for (const auto& [name, entry] : entries) {
    const bool added = table.emplace(name, entry.SerializeAsString()).second;
    EST_ASSERT(added, "bundle entry '", name, "' is repeated or the header key");
  }
  return EncodeTable(table);
}

TensorBundleIndex DecodeBundleIndex(const std::string& bytes, const std::string& index_path) {
  std::vector<std::pair<std::string, std::string>> table = DecodeTable(bytes, index_path);
  EST_CHECK(!table.empty() && table.front().first == kBundleHeaderKey, CheckpointError,
            "checkpoint index '", index_path, "' has no bundle header (its first key is not \"\")");
  TensorBundleIndex index;
  EST_CHECK(ParseValue(table.front().second, index.header), CheckpointError, "checkpoint index '",
            index_path, "' has a header that is not a BundleHeaderProto");
  CheckHeader(index.header, index_path);
  index.entries.reserve(table.size() - 1);
  for (size_t i = 1; i < table.size(); ++i) {
    auto& [name, value] = table[i];
    proto::BundleEntryProto entry;
    EST_CHECK(ParseValue(value, entry), CheckpointError, "checkpoint index '", index_path,
              "' has an entry for '", name, "' that is not a BundleEntryProto");
    index.entries.emplace_back(std::move(name), std::move(entry));
  }
  return index;
}

}  // namespace est::checkpoint
