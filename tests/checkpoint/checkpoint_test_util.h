#pragma once
/// Helpers shared by the checkpoint tests: damaging files on purpose, reading a
/// manifest, capturing log lines.

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_files.h"
#include "checkpoint/index_codec.h"
#include "checkpoint/manifest.pb.h"
#include "common/file_util.h"
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

/// The manifest of the checkpoint `<prefix>`.
inline proto::Manifest ReadManifest(const std::string& prefix) {
  proto::Manifest manifest;
  DecodeIndex(ReadFile(IndexPath(prefix)), IndexPath(prefix), manifest);
  return manifest;
}

/// The offset in the data file of the tensor called `name`.
inline uint64_t TensorOffset(const std::string& prefix, const std::string& name) {
  const proto::Manifest manifest = ReadManifest(prefix);
  for (const auto& entry : manifest.tensors()) {
    if (entry.name() == name) return entry.offset();
  }
  throw std::runtime_error("no tensor " + name);
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
