#pragma once
/// Helpers shared by the checkpoint tests: damaging files on purpose, reading and rewriting
/// the index of either format, writing a checkpoint of the older manifest format, capturing
/// log lines.

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint_files.h"
#include "checkpoint/checkpoint_writer.h"
#include "checkpoint/index_codec.h"
#include "checkpoint/leveldb_table.h"
#include "checkpoint/manifest.pb.h"
#include "checkpoint/tensor_bundle_index.h"
#include "common/file_util.h"
#include "tests/checkpoint/manifest_checkpoint_writer.h"
#include "tests/log_capture.h"

namespace est::checkpoint::testing {

/// A model_dir and a directory beside it that a path escaping model_dir would reach.
struct EscapeLayout {
  std::filesystem::path model;    ///< <root>/model
  std::filesystem::path outside;  ///< <root>/outside
};

/// Creates <root>/model and <root>/outside, and the symbolic link <root>/model/link to
/// the latter.
inline EscapeLayout MakeEscapeLayout(const std::filesystem::path& root) {
  EscapeLayout layout{root / "model", root / "outside"};
  std::filesystem::create_directories(layout.model);
  std::filesystem::create_directories(layout.outside);
  std::filesystem::create_directory_symlink(layout.outside, layout.model / "link");
  return layout;
}

/// Makes the data file of checkpoint `step` in `dir` impossible to create: a non-empty
/// directory takes its name, so renaming the finished file into place fails.
inline void BlockCheckpoint(const std::string& dir, int64_t step) {
  const std::filesystem::path data = DataPath(CheckpointPrefix(dir, step));
  std::filesystem::create_directories(data / "blocker");
}

/// Inverts every bit of the byte at `offset` of the file at `path`.
inline void FlipByte(const std::string& path, uint64_t offset) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(static_cast<std::streamoff>(offset));
  char byte = 0;
  file.get(byte);
  file.seekp(static_cast<std::streamoff>(offset));
  file.put(static_cast<char>(~byte));
}

/// Cuts the file at `path` down to `size` bytes.
inline void TruncateFile(const std::string& path, uint64_t size) {
  std::filesystem::resize_file(path, size);
}

/// The index formats a reader must read.
enum class Format { kBundle, kManifest };

/// The format's name, for test output.
inline const char* FormatName(Format format) {
  return format == Format::kBundle ? "tensor bundle" : "manifest";
}

/// Writes a checkpoint in `format`: WriteCheckpoint's bundle or the older manifest.
inline void WriteInFormat(Format format, const std::string& prefix,
                          const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                          const std::map<std::string, std::string>& blobs, int64_t global_step) {
  if (format == Format::kBundle) {
    WriteCheckpoint(prefix, tensors, blobs, global_step);
  } else {
    WriteManifestCheckpoint(prefix, tensors, blobs, global_step);
  }
}

/// True when the index of `<prefix>` is a tensor bundle's.
inline bool IsBundle(const std::string& prefix) {
  return HasTableMagic(ReadFile(IndexPath(prefix)));
}

/// The manifest of the checkpoint `<prefix>` (manifest format).
inline proto::Manifest ReadManifest(const std::string& prefix) {
  proto::Manifest manifest;
  DecodeIndex(ReadFile(IndexPath(prefix)), IndexPath(prefix), manifest);
  return manifest;
}

/// The index of the checkpoint `<prefix>` (bundle format).
inline TensorBundleIndex ReadBundleIndex(const std::string& prefix) {
  return DecodeBundleIndex(ReadFile(IndexPath(prefix)), IndexPath(prefix));
}

/// The entry of `key` in a bundle's index.
inline proto::BundleEntryProto& FindEntry(TensorBundleIndex& index, const std::string& key) {
  for (auto& [name, entry] : index.entries) {
    if (name == key) return entry;
  }
  throw std::runtime_error("no entry " + key);
}

/// Writes `index` as the index of `<prefix>`.
inline void RewriteBundleIndex(const std::string& prefix, const TensorBundleIndex& index) {
  WriteFileAtomic(IndexPath(prefix), EncodeBundleIndex(index.entries, index.header.num_shards()));
}

/// The offset in the data file of the tensor called `name`, in either format.
inline uint64_t TensorOffset(const std::string& prefix, const std::string& name) {
  if (IsBundle(prefix)) {
    TensorBundleIndex index = ReadBundleIndex(prefix);
    return static_cast<uint64_t>(FindEntry(index, name).offset());
  }
  const proto::Manifest manifest = ReadManifest(prefix);
  for (const auto& entry : manifest.tensors()) {
    if (entry.name() == name) return entry.offset();
  }
  throw std::runtime_error("no tensor " + name);
}

/// The offset in the data file of the blob called `name`, in either format.
inline uint64_t BlobOffset(const std::string& prefix, const std::string& name) {
  if (IsBundle(prefix)) {
    TensorBundleIndex index = ReadBundleIndex(prefix);
    return static_cast<uint64_t>(FindEntry(index, kBlobKeyPrefix + name).offset());
  }
  const proto::Manifest manifest = ReadManifest(prefix);
  for (const auto& entry : manifest.blobs()) {
    if (entry.name() == name) return entry.offset();
  }
  throw std::runtime_error("no blob " + name);
}

/// Rewrites the index of `<prefix>` (either format) so that tensor `name` lies at `offset`.
inline void SetTensorOffset(const std::string& prefix, const std::string& name, uint64_t offset) {
  if (IsBundle(prefix)) {
    TensorBundleIndex index = ReadBundleIndex(prefix);
    FindEntry(index, name).set_offset(static_cast<int64_t>(offset));
    RewriteBundleIndex(prefix, index);
    return;
  }
  proto::Manifest manifest = ReadManifest(prefix);
  for (auto& entry : *manifest.mutable_tensors()) {
    if (entry.name() == name) entry.set_offset(offset);
  }
  WriteFileAtomic(IndexPath(prefix), EncodeIndex(manifest));
}

/// Rewrites the index of `<prefix>` (either format) so that the first dimension of tensor
/// `name` is `size`.
inline void SetFirstDimension(const std::string& prefix, const std::string& name, int64_t size) {
  if (IsBundle(prefix)) {
    TensorBundleIndex index = ReadBundleIndex(prefix);
    FindEntry(index, name).mutable_shape()->mutable_dim(0)->set_size(size);
    RewriteBundleIndex(prefix, index);
    return;
  }
  proto::Manifest manifest = ReadManifest(prefix);
  for (auto& entry : *manifest.mutable_tensors()) {
    if (entry.name() == name) entry.set_shape(0, size);
  }
  WriteFileAtomic(IndexPath(prefix), EncodeIndex(manifest));
}

/// Names of the entries directly inside `dir`, sorted.
inline std::vector<std::string> ListDirectory(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// Captures what est::Log() prints while it lives.
using est::testing::LogCapture;

}  // namespace est::checkpoint::testing
