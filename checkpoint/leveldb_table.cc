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
