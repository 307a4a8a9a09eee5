#pragma once
/// A LevelDB table (sstable) held in memory: the layout of a tensor bundle's `.index` file.
/// LevelDB's own TableBuilder and Table write and read it (sorted keys, bytewise comparator,
/// no compression, every block with a masked CRC32C); this unit only moves the bytes
/// between them and a std::string, so the caller decides how the file is written or read.

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace est::checkpoint {

/// The bytes of a table holding `entries` (in their bytewise key order).
std::string EncodeTable(const std::map<std::string, std::string>& entries);

/// True when `bytes` end with a table footer's magic number (0xdb4775248b80fb57).
bool HasTableMagic(std::string_view bytes);

/// Every entry of the table `bytes`, in key order, with each block's checksum verified.
/// Throws CheckpointError naming `path` when the bytes are truncated or damaged.
std::vector<std::pair<std::string, std::string>> DecodeTable(const std::string& bytes,
                                                             const std::string& path);

}  // namespace est::checkpoint
