#pragma once
/// Reading checkpoints of the format this library wrote before tensor bundles: a
/// protobuf Manifest with a trailing CRC32C (index_codec.h) and one data file. Model
/// directories of that time keep restoring.

#include <memory>
#include <string>

#include "checkpoint/format_reader.h"

namespace est::checkpoint {

/// Opens the checkpoint `prefix` whose index file holds `index_bytes`; throws
/// CheckpointError naming the file when the index is damaged, the data file is missing or
/// of another size than the manifest records, or an entry lies outside it.
std::unique_ptr<FormatReader> OpenManifestCheckpoint(const std::string& prefix,
                                                     const std::string& index_bytes);

}  // namespace est::checkpoint
