#pragma once
/// Reading TensorFlow tensor bundles: ours (checkpoint_writer.h) and TensorFlow's own
/// (one or more data shards, string tensors, any keys). Partitioned variables are listed
/// but refused when read.

#include <memory>
#include <string>

#include "checkpoint/format_reader.h"

namespace est::checkpoint {

/// Opens the bundle `prefix` whose index file holds `index_bytes`; throws CheckpointError
/// naming the file when the index is damaged, a data file is missing, or an entry lies
/// outside its data file or has a size its shape and dtype cannot have.
std::unique_ptr<FormatReader> OpenBundleCheckpoint(const std::string& prefix,
                                                   const std::string& index_bytes);

}  // namespace est::checkpoint
