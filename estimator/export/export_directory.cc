#include "estimator/export/export_directory.h"

#include <ATen/ATen.h>
#include <ATen/core/Dict.h>
#include <torch/serialize.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <string_view>

#include "common/crash_point.h"
#include "common/crc32c.h"
#include "common/error.h"
#include "common/file_util.h"
#include "common/logging.h"

namespace est {
namespace {

namespace fs = std::filesystem;

/// Prefix of the temporary directory an export is written in.
constexpr const char* kTemporaryPrefix = ".tmp-export-";

/// The version a directory name stands for, or -1 for another name.
int64_t VersionOf(const std::string& name) {
  if (name.empty() || name.size() > 18 || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  return std::stoll(name);
}

/// The files an export may hold.
constexpr const char* kExportFiles[] = {kExportManifestFile, kExportWeightsFile, kExportProgramFile,
                                        kExportOnnxFile};

bool IsExportFile(std::string_view name) {
  return std::find(std::begin(kExportFiles), std::end(kExportFiles), name) != std::end(kExportFiles);
}

/// Whether `name` is an asset's file (kExportAssetsDir/<plain name>).
bool IsAssetFile(const std::string& name) {
  const std::string prefix = std::string(kExportAssetsDir) + "/";
  if (name.rfind(prefix, 0) != 0) return false;
  try {
    CheckAssetName(name.substr(prefix.size()), "an asset");
  } catch (const ConfigError&) {
    return false;
  }
  return true;
}

/// Removes export `dir`'s own files and then the directory, which is left (with a warning)
/// where something else is in it.
void RemoveExportFiles(const fs::path& dir) {
  std::error_code error;
  for (const char* file : kExportFiles) fs::remove(dir / file, error);
  RemoveTemporaryFiles(dir.string(), IsExportFile);
  const fs::path assets = dir / kExportAssetsDir;
  if (fs::is_directory(assets, error)) {  // the export's own assets: plain names, files only
    for (const auto& entry : fs::directory_iterator(assets, error)) {
      const std::string name = std::string(kExportAssetsDir) + "/" + entry.path().filename().string();
      if (IsAssetFile(name) && entry.is_regular_file(error)) fs::remove(entry.path(), error);
    }
    RemoveTemporaryFiles(assets.string(), [](std::string_view) { return true; });
    fs::remove(assets, error);
  }
  if (!fs::remove(dir, error))
    Log().warn("left '{}' in place: it holds files that are not the export's ({})", dir.string(),
               error ? error.message() : "not empty");
}

/// Removes the temporary directories of exports whose writer died before it finished.
void RemoveAbandonedExports(const std::string& export_dir_base) {
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(export_dir_base, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kTemporaryPrefix, 0) != 0 || !entry.is_directory(error)) continue;
    const size_t digits = std::strlen(kTemporaryPrefix);
    const size_t dash = name.find('-', digits);
    const int64_t pid = dash == std::string::npos ? -1 : VersionOf(name.substr(digits, dash - digits));
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) RemoveExportFiles(entry.path());
  }
}

std::string RandomHex() {
  std::random_device device;
  char text[17];
  std::snprintf(text, sizeof text, "%08x%08x", device(), device());
  return text;
}

}  // namespace

std::string ExportVersionPath(const std::string& export_dir_base, int64_t version) {
  return (fs::path(export_dir_base) / std::to_string(version)).string();
}

std::vector<int64_t> ExportVersions(const std::string& export_dir_base) {
  std::vector<int64_t> versions;
  std::error_code error;
  if (!fs::is_directory(export_dir_base, error)) return versions;
  for (const auto& entry : fs::directory_iterator(export_dir_base, error)) {
    const int64_t version = VersionOf(entry.path().filename().string());
    if (version >= 0 && fs::is_regular_file(entry.path() / kExportManifestFile, error)) versions.push_back(version);
  }
  std::sort(versions.begin(), versions.end());
  return versions;
}

std::string WriteExport(const std::string& export_dir_base, ExportManifest manifest,
                        const std::map<std::string, at::Tensor>& weights,
                        const std::map<std::string, std::string>& files) {
  for (const auto& [name, contents] : files)
    EST_ASSERT((IsExportFile(name) || IsAssetFile(name)) && name != kExportManifestFile && name != kExportWeightsFile,
               "'", name, "' is not a file an export holds");
  CreateDirectories(export_dir_base);
  RemoveAbandonedExports(export_dir_base);
  c10::Dict<std::string, at::Tensor> dictionary;
  for (const auto& [name, tensor] : weights) dictionary.insert(name, tensor.detach().to(at::kCPU).contiguous());
  const std::vector<char> bytes = torch::pickle_save(c10::IValue(dictionary));
  manifest.weights_bytes = bytes.size();
  manifest.weights_crc32c = crc32c::Value(bytes.data(), bytes.size());

  const fs::path temporary =
      fs::path(export_dir_base) / (std::string(kTemporaryPrefix) + std::to_string(::getpid()) + "-" + RandomHex());
  CreateDirectories(temporary.string());
  try {
    WriteFileAtomic((temporary / kExportWeightsFile).string(), std::string_view(bytes.data(), bytes.size()));
    for (const auto& [name, contents] : files) {
      if (IsAssetFile(name)) CreateDirectories((temporary / kExportAssetsDir).string());
      WriteFileAtomic((temporary / name).string(), contents);
    }
    WriteFileAtomic((temporary / kExportManifestFile).string(), manifest.to_json());
  } catch (...) {
    RemoveExportFiles(temporary);
    throw;
  }
  CrashPoint("export_rename", manifest.global_step);  // whole files, in the temporary directory
  const std::vector<int64_t> versions = ExportVersions(export_dir_base);
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  int64_t version = std::max(now, versions.empty() ? 0 : versions.back() + 1);
  for (;; ++version) {
    const std::string target = ExportVersionPath(export_dir_base, version);
    // rename() onto an existing non-empty directory fails, so two writers never share a version.
    if (::rename(temporary.c_str(), target.c_str()) == 0) {
      FsyncDirectory(export_dir_base);
      return target;
    }
    if (errno != EEXIST && errno != ENOTEMPTY) {
      const std::string why = std::strerror(errno);
      RemoveExportFiles(temporary);
      EST_THROW(IoError, "cannot rename the export '", temporary.string(), "' to '", target, "': ", why);
    }
  }
}

ExportManifest ReadExportManifest(const std::string& version_dir) {
  const std::string manifest_path = (fs::path(version_dir) / kExportManifestFile).string();
  EST_CHECK(fs::is_regular_file(manifest_path), CheckpointError, "no export in '", version_dir, "': it has no ",
            kExportManifestFile);
  return ExportManifest::Parse(ReadFile(manifest_path), manifest_path);
}

LoadedExport ReadExport(const std::string& version_dir) {
  LoadedExport loaded;
  loaded.path = version_dir;
  loaded.version = VersionOf(fs::path(version_dir).lexically_normal().filename().string());
  if (loaded.version < 0) loaded.version = VersionOf(fs::path(version_dir).lexically_normal().parent_path().filename().string());
  loaded.manifest = ReadExportManifest(version_dir);

  const std::string weights_path = (fs::path(version_dir) / kExportWeightsFile).string();
  const std::string bytes = ReadExportFile(
      version_dir, {kExportWeightsFile, loaded.manifest.weights_bytes, loaded.manifest.weights_crc32c});
  c10::IValue value;
  try {
    value = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  } catch (const std::exception& e) {
    EST_THROW(CheckpointError, "'", weights_path, "' cannot be read as a name -> tensor dictionary: ", e.what());
  }
  EST_CHECK(value.isGenericDict(), CheckpointError, "'", weights_path, "' holds a ", value.tagKind(),
            "; expected a name -> tensor dictionary");
  for (const auto& item : value.toGenericDict()) {
    EST_CHECK(item.key().isString() && item.value().isTensor(), CheckpointError, "'", weights_path,
              "' holds an entry that is not a name and a tensor");
    loaded.weights.emplace(item.key().toStringRef(), item.value().toTensor());
  }
  return loaded;
}

std::string ReadExportFile(const std::string& version_dir, const ExportFileRecord& record) {
  const std::string path = (fs::path(version_dir) / record.file).string();
  EST_CHECK(fs::is_regular_file(path), CheckpointError, "the export in '", version_dir, "' has no ", record.file,
            ", which its manifest records");
  std::string contents = ReadFile(path);
  EST_CHECK(contents.size() == record.bytes, CheckpointError, "'", path, "' has ", contents.size(),
            " bytes; its manifest says ", record.bytes, " (truncated or replaced)");
  const uint32_t crc = crc32c::Value(contents);
  EST_CHECK(crc == record.crc32c, CheckpointError, "'", path, "' is corrupt: its CRC32C is ", crc,
            ", its manifest says ", record.crc32c);
  return contents;
}

int RemoveOldExports(const std::string& export_dir_base, int keep) {
  EST_CHECK(keep >= 1, ConfigError, "exports_to_keep must be at least 1, got ", keep);
  int removed = 0;
  std::vector<int64_t> versions = ExportVersions(export_dir_base);
  for (size_t i = 0; i + static_cast<size_t>(keep) < versions.size(); ++i) {
    RemoveExportFiles(ExportVersionPath(export_dir_base, versions[i]));
    ++removed;
  }
  RemoveAbandonedExports(export_dir_base);
  return removed;
}

}  // namespace est
