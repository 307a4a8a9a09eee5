#pragma once
/// The files of a checkpoint `<prefix>`, named as TensorFlow names them:
/// `<prefix>.index` (the index) and `<prefix>.data-00000-of-00001` (tensor bytes).

#include <cstdint>
#include <string>
#include <string_view>

namespace est::checkpoint {

/// The basename prefix of checkpoints in a model directory: `model.ckpt-<step>`.
inline constexpr char kCheckpointBasename[] = "model.ckpt";

/// `<dir>/model.ckpt-<step>`.
std::string CheckpointPrefix(const std::string& dir, int64_t step);

/// True when two prefixes name the same checkpoint (compared as normalized absolute paths).
bool SamePrefix(const std::string& a, const std::string& b);

/// `<prefix>.index`: what the data files hold and where.
std::string IndexPath(const std::string& prefix);

/// `<prefix>.data-00000-of-00001`: the bytes of every tensor and blob.
std::string DataPath(const std::string& prefix);

/// `<prefix>.data-<shard>-of-<num_shards>`, numbers of five digits: one data file of a bundle
/// that TensorFlow wrote in several.
std::string DataPath(const std::string& prefix, int shard, int num_shards);

/// True when `name` is the name of a file that checkpoints consist of: the state file
/// `checkpoint`, `model.ckpt-<step>.index` or `model.ckpt-<step>.data-00000-of-00001`.
bool IsCheckpointFileName(std::string_view name);

/// True when `<prefix>.index` exists (the data file is written before it).
bool CheckpointExists(const std::string& prefix);

/// True when both files of checkpoint `prefix` lie directly in directory `dir` once ".",
/// ".." and symbolic links (of the directories and of the files themselves) are resolved.
/// A `checkpoint` state file may name any path; only prefixes for which this holds are read
/// or deleted on its word, so a crafted entry cannot reach outside the model directory.
bool CheckpointInDirectory(const std::string& dir, const std::string& prefix);

/// Removes both files of a checkpoint, ignoring files that are already gone; returns
/// false (and leaves the rest) when one exists but cannot be removed.
bool RemoveCheckpointFiles(const std::string& prefix);

}  // namespace est::checkpoint
