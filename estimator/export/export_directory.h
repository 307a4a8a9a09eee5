#pragma once
/// The export directory: `<export_dir_base>/<version>/` holding export.json (ExportManifest)
/// and variables.pt (the weights), versions being whole numbers that increase, as TensorFlow
/// Serving's model base paths have them. Written atomically, read with every check.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "estimator/export/export_manifest.h"

namespace est {

/// Writes a new version under `export_dir_base` (created when absent) holding `manifest`,
/// `weights` (copied to the CPU) and `files` (name → contents: the program, the ONNX model and
/// the assets the manifest records); the manifest's weights size and checksum are filled in.
/// The version is the current Unix time in seconds, or one more than the newest version when
/// that is not above it. Atomic: the files are written and fsynced in a temporary directory
/// (`.tmp-export-*`), which is then renamed to the version, so a version is whole or absent,
/// also after a crash. Returns the version's directory.
std::string WriteExport(const std::string& export_dir_base, ExportManifest manifest,
                        const std::map<std::string, at::Tensor>& weights,
                        const std::map<std::string, std::string>& files = {});

/// An export read back.
struct LoadedExport {
  /// Its version directory and version.
  std::string path;
  int64_t version = 0;
  ExportManifest manifest;
  /// The weights by name, on the CPU.
  std::map<std::string, at::Tensor> weights;
};

/// The manifest of the export in `version_dir`, without its weights. CheckpointError naming the
/// file for a missing or corrupt manifest.
ExportManifest ReadExportManifest(const std::string& version_dir);

/// Reads the export in `version_dir`. CheckpointError naming the file and what is wrong for a
/// missing, truncated or corrupt manifest or weights file.
LoadedExport ReadExport(const std::string& version_dir);

/// The contents of the file `record` names in the export `version_dir`, checked against the
/// record's size and CRC32C. CheckpointError naming the file for a missing, truncated or corrupt one.
std::string ReadExportFile(const std::string& version_dir, const ExportFileRecord& record);

/// The versions under `export_dir_base`: its subdirectories named by a whole number that hold
/// an export.json, oldest first. Empty when the directory does not exist.
std::vector<int64_t> ExportVersions(const std::string& export_dir_base);

/// `export_dir_base`/`version`.
std::string ExportVersionPath(const std::string& export_dir_base, int64_t version);

/// Removes the versions of `export_dir_base` older than its newest `keep` (an exporter's
/// exports_to_keep); returns how many. Only versions (numbered directories holding an
/// export.json) are removed, and temporary directories a crashed export left.
int RemoveOldExports(const std::string& export_dir_base, int keep);

}  // namespace est
