#pragma once
/// The `<prefix>.index` file of a TensorFlow tensor bundle: a LevelDB table whose first key,
/// "", holds a BundleHeaderProto and whose every other key is a tensor's name holding its
/// BundleEntryProto (tensor_bundle.proto).

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "checkpoint/tensor_bundle.pb.h"

namespace est::checkpoint {

/// The key of the header entry.
inline constexpr char kBundleHeaderKey[] = "";
/// The bundle format version this build writes (TensorFlow's kTensorBundleVersion) and the
/// newest whose readers it accepts as min_consumer.
inline constexpr int kTensorBundleVersion = 1;
/// Keys of the blobs (opaque byte strings) that WriteCheckpoint stores, each a DT_STRING
/// scalar: `_est_blobs/<blob name>`. No tensor name may start with it.
inline constexpr char kBlobKeyPrefix[] = "_est_blobs/";

/// The tensor that holds the global step, named as TensorFlow names it: an int64 scalar.
inline constexpr char kGlobalStepTensorName[] = "global_step";

/// The parsed index: its header, and every other entry in key order.
struct TensorBundleIndex {
  proto::BundleHeaderProto header;
  std::vector<std::pair<std::string, proto::BundleEntryProto>> entries;
};

/// The index bytes of a little-endian bundle of `num_shards` data files holding `entries`
/// (names distinct, none of them the header key; any order).
std::string EncodeBundleIndex(const std::vector<std::pair<std::string, proto::BundleEntryProto>>& entries,
                              int num_shards);

/// Parses and checks index bytes; throws CheckpointError naming `index_path` when they are
/// truncated, damaged, lack the header, or describe a bundle this build cannot read
/// (big-endian, no shards, a newer format).
TensorBundleIndex DecodeBundleIndex(const std::string& bytes, const std::string& index_path);

}  // namespace est::checkpoint
