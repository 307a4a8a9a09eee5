#pragma once
/// A writer of the checkpoint format this library wrote before tensor bundles (a protobuf
/// Manifest index with a trailing CRC32C, every entry 64-byte aligned in one data file), so
/// that the tests check that such model_dirs keep restoring. The library reads it only.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint_files.h"
#include "checkpoint/data_type.h"
#include "checkpoint/index_codec.h"
#include "checkpoint/manifest.pb.h"
#include "common/crc32c.h"
#include "common/file_util.h"

namespace est::checkpoint::testing {

/// Appends `size` bytes at the next multiple of 64 bytes; returns that offset.
inline uint64_t AppendManifestAligned(std::string& data, const void* bytes, uint64_t size) {
  data.resize((data.size() + 63) / 64 * 64, '\0');
  const uint64_t offset = data.size();
  data.append(static_cast<const char*>(bytes), size);
  return offset;
}

/// Writes `<prefix>` in the manifest format, as WriteCheckpoint wrote it before bundles.
inline void WriteManifestCheckpoint(const std::string& prefix,
                                    const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                                    const std::map<std::string, std::string>& blobs,
                                    int64_t global_step) {
  proto::Manifest manifest;
  manifest.set_format_version(kFormatVersion);
  manifest.set_global_step(global_step);
  std::string data;
  for (const auto& [name, tensor] : tensors) {
    const at::Tensor stored = tensor.detach().cpu().resolve_conj().resolve_neg().contiguous();
    auto* entry = manifest.add_tensors();
    entry->set_name(name);
    entry->set_dtype(static_cast<proto::DataType>(*DataTypeNumber(stored.scalar_type())));
    for (int64_t dim : stored.sizes()) entry->add_shape(dim);
    entry->set_offset(AppendManifestAligned(data, stored.data_ptr(), stored.nbytes()));
    entry->set_size(stored.nbytes());
    entry->set_crc32c(crc32c::Value(stored.data_ptr(), stored.nbytes()));
  }
  for (const auto& [name, bytes] : blobs) {
    auto* entry = manifest.add_blobs();
    entry->set_name(name);
    entry->set_offset(AppendManifestAligned(data, bytes.data(), bytes.size()));
    entry->set_size(bytes.size());
    entry->set_crc32c(crc32c::Value(bytes));
  }
  manifest.set_data_size(data.size());
  WriteFileAtomic(DataPath(prefix), data);
  WriteFileAtomic(IndexPath(prefix), EncodeIndex(manifest));
}

}  // namespace est::checkpoint::testing
