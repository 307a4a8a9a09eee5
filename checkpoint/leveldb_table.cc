#include "checkpoint/leveldb_table.h"

#include <leveldb/env.h>
#include <leveldb/iterator.h>
#include <leveldb/options.h>
#include <leveldb/table.h>
#include <leveldb/table_builder.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "common/error.h"

namespace est::checkpoint {
namespace {

/// A table footer ends with this number, stored little-endian.
constexpr uint64_t kTableMagic = 0xdb4775248b80fb57ull;

/// A leveldb::WritableFile that collects what is appended in a string.
class StringSink : public leveldb::WritableFile {
 public:
  explicit StringSink(std::string& out) : out_(out) {}
  leveldb::Status Append(const leveldb::Slice& data) override {
    out_.append(data.data(), data.size());
    return leveldb::Status::OK();
  }
  leveldb::Status Close() override { return leveldb::Status::OK(); }
  leveldb::Status Flush() override { return leveldb::Status::OK(); }
  leveldb::Status Sync() override { return leveldb::Status::OK(); }

 private:
  std::string& out_;
};

/// A leveldb::RandomAccessFile over bytes in memory; reads past the end come back short.
class StringSource : public leveldb::RandomAccessFile {
 public:
  explicit StringSource(const std::string& bytes) : bytes_(bytes) {}
  leveldb::Status Read(uint64_t offset, size_t n, leveldb::Slice* result,
                       char* /*scratch*/) const override {
    if (offset > bytes_.size()) return leveldb::Status::IOError("read beyond the end");
    *result = leveldb::Slice(bytes_.data() + offset, std::min<uint64_t>(n, bytes_.size() - offset));
    return leveldb::Status::OK();
  }

 private:
  const std::string& bytes_;
};

/// The size of a table's footer: two block handles padded to 40 bytes, and the magic number.
constexpr size_t kFooterSize = 48;
/// After each block: its compression type and its masked CRC32C.
constexpr uint64_t kBlockTrailerSize = 5;

/// Reads a varint of at most `max_bytes` at `*pos` of `bytes`, up to `end`; false when it runs
/// past `end` or is longer.
bool ReadVarint(const std::string& bytes, size_t* pos, size_t end, int max_bytes, uint64_t* value) {
  *value = 0;
  for (int shift = 0, i = 0; i < max_bytes; ++i, shift += 7) {
    if (*pos >= end) return false;
    const auto byte = static_cast<unsigned char>(bytes[(*pos)++]);
    *value |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80u) == 0) return true;
  }
  return false;
}

/// Reads a block handle (offset and size varints) at `*pos` and checks that the block and its
/// trailer lie before the footer: LevelDB allocates a block's size before it reads it, so a
/// damaged handle must be refused first.
bool ReadBlockHandle(const std::string& bytes, size_t* pos, size_t end, uint64_t* offset, uint64_t* size) {
  if (!ReadVarint(bytes, pos, end, 10, offset) || !ReadVarint(bytes, pos, end, 10, size)) return false;
  const uint64_t blocks_end = bytes.size() - kFooterSize;
  return *offset <= blocks_end && *size <= blocks_end - *offset &&
         kBlockTrailerSize <= blocks_end - *offset - *size;
}

/// Checks every block handle of a table before LevelDB reads it: the footer's two, and the data
/// blocks' in the index block (entries of prefix-compressed keys whose values are handles, then
/// the restart offsets and their count). False where one points outside the file or the index
/// block cannot be walked.
bool BlockHandlesFit(const std::string& bytes) {
  if (bytes.size() < kFooterSize) return false;
  size_t pos = bytes.size() - kFooterSize;
  uint64_t meta_offset = 0, meta_size = 0, index_offset = 0, index_size = 0;
  if (!ReadBlockHandle(bytes, &pos, bytes.size(), &meta_offset, &meta_size) ||
      !ReadBlockHandle(bytes, &pos, bytes.size(), &index_offset, &index_size) || index_size < 4) {
    return false;
  }
  const size_t block = static_cast<size_t>(index_offset);
  const size_t block_end = block + static_cast<size_t>(index_size);
  uint32_t restarts = 0;
  std::memcpy(&restarts, bytes.data() + block_end - 4, 4);  // little-endian, as the hosts we run on
  if (restarts > (index_size - 4) / 4) return false;
  const size_t entries_end = block_end - 4 - size_t{restarts} * 4;
  for (pos = block; pos < entries_end;) {
    uint64_t shared = 0, non_shared = 0, value_size = 0;
    if (!ReadVarint(bytes, &pos, entries_end, 5, &shared) || !ReadVarint(bytes, &pos, entries_end, 5, &non_shared) ||
        !ReadVarint(bytes, &pos, entries_end, 5, &value_size) || non_shared > entries_end - pos) {
      return false;
    }
    pos += static_cast<size_t>(non_shared);
    if (value_size > entries_end - pos) return false;
    const size_t value_end = pos + static_cast<size_t>(value_size);
    uint64_t offset = 0, size = 0;
    if (!ReadBlockHandle(bytes, &pos, value_end, &offset, &size)) return false;
    pos = value_end;
  }
  return true;
}

leveldb::Options TableOptions() {
  leveldb::Options options;
  options.compression = leveldb::kNoCompression;
  options.paranoid_checks = true;  // Table::Open verifies the index and meta blocks
  return options;
}

}  // namespace

std::string EncodeTable(const std::map<std::string, std::string>& entries) {
  std::string bytes;
  StringSink sink(bytes);
  leveldb::TableBuilder builder(TableOptions(), &sink);
  for (const auto& [key, value] : entries) builder.Add(key, value);
  const leveldb::Status status = builder.Finish();
  EST_ASSERT(status.ok());
  return bytes;
}

bool HasTableMagic(std::string_view bytes) {
  if (bytes.size() < sizeof(kTableMagic)) return false;
  unsigned char tail[sizeof(kTableMagic)];
  std::memcpy(tail, bytes.data() + bytes.size() - sizeof(tail), sizeof(tail));
  uint64_t magic = 0;
  for (size_t i = 0; i < sizeof(tail); ++i) magic |= uint64_t{tail[i]} << (8 * i);
  return magic == kTableMagic;
}

std::vector<std::pair<std::string, std::string>> DecodeTable(const std::string& bytes,
                                                             const std::string& path) {
  EST_CHECK(BlockHandlesFit(bytes), CheckpointError, "checkpoint index '", path, "' (", bytes.size(),
            " bytes) is truncated or damaged: a block handle points outside the file");
  StringSource source(bytes);
  leveldb::Table* opened = nullptr;
  const leveldb::Status open = leveldb::Table::Open(TableOptions(), &source, bytes.size(), &opened);
  EST_CHECK(open.ok(), CheckpointError, "checkpoint index '", path, "' (", bytes.size(),
            " bytes) is truncated or damaged: ", open.ToString());
  const std::unique_ptr<leveldb::Table> table(opened);
  leveldb::ReadOptions read_options;
  read_options.verify_checksums = true;
  const std::unique_ptr<leveldb::Iterator> it(table->NewIterator(read_options));
  std::vector<std::pair<std::string, std::string>> entries;
  for (it->SeekToFirst(); it->Valid(); it->Next())
    entries.emplace_back(it->key().ToString(), it->value().ToString());
  EST_CHECK(it->status().ok(), CheckpointError, "checkpoint index '", path,
            "' is damaged: ", it->status().ToString());
  return entries;
}

}  // namespace est::checkpoint
