#include "checkpoint/checkpoint_files.h"

#include <cstdio>
#include <filesystem>
#include <system_error>

#include "checkpoint/checkpoint_state.h"

namespace est::checkpoint {

std::string CheckpointPrefix(const std::string& dir, int64_t step) {
  return (std::filesystem::path(dir) /
          (std::string(kCheckpointBasename) + "-" + std::to_string(step)))
      .string();
}

bool SamePrefix(const std::string& a, const std::string& b) {
  return std::filesystem::absolute(a).lexically_normal() ==
         std::filesystem::absolute(b).lexically_normal();
}

std::string IndexPath(const std::string& prefix) { return prefix + ".index"; }

std::string DataPath(const std::string& prefix) { return DataPath(prefix, 0, 1); }

std::string DataPath(const std::string& prefix, int shard, int num_shards) {
  char suffix[48];
  std::snprintf(suffix, sizeof(suffix), ".data-%05d-of-%05d", shard, num_shards);
  return prefix + suffix;
}

bool IsCheckpointFileName(std::string_view name) {
  if (name == kStateFileName) return true;
  const std::string_view start = std::string_view(kCheckpointBasename);
  if (name.substr(0, start.size() + 1) != std::string(start) + "-") return false;
  const std::string_view rest = name.substr(start.size() + 1);
  const size_t digits = rest.find_first_not_of("0123456789");
  if (digits == 0 || digits == std::string_view::npos) return false;
  const std::string_view suffix = rest.substr(digits);
  return suffix == ".index" || suffix == ".data-00000-of-00001";
}

bool CheckpointExists(const std::string& prefix) {
  std::error_code ec;
  return std::filesystem::is_regular_file(IndexPath(prefix), ec);
}

bool CheckpointInDirectory(const std::string& dir, const std::string& prefix) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path directory = fs::weakly_canonical(fs::absolute(dir), ec);
  if (ec) return false;
  for (const std::string& file : {IndexPath(prefix), DataPath(prefix)}) {
    const fs::path resolved = fs::weakly_canonical(fs::absolute(file), ec);
    if (ec || resolved.parent_path() != directory) return false;
  }
  return true;
}

bool RemoveCheckpointFiles(const std::string& prefix) {
  std::error_code ec;
  // The index goes first: a checkpoint without its index is simply absent.
  std::filesystem::remove(IndexPath(prefix), ec);
  if (ec) return false;
  std::filesystem::remove(DataPath(prefix), ec);
  return !ec;
}

}  // namespace est::checkpoint
