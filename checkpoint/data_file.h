#pragma once
/// One data file of a checkpoint, held open for reading: a checkpoint that retention deletes
/// while it is read stays readable. Reads are safe from several threads (pread).

#include <cstdint>
#include <string>

namespace est::checkpoint {

/// An open data file. Every error is a CheckpointError naming the file.
class DataFile {
 public:
  /// Opens `path`; throws CheckpointError when it is missing or cannot be examined.
  explicit DataFile(std::string path);
  ~DataFile();
  DataFile(DataFile&& other) noexcept;
  DataFile& operator=(DataFile&&) = delete;
  DataFile(const DataFile&) = delete;
  DataFile& operator=(const DataFile&) = delete;

  /// The path it was opened with.
  const std::string& path() const { return path_; }
  /// Its size when it was opened.
  uint64_t size() const { return size_; }
  /// True when [offset, offset + size) lies within the file.
  bool contains(uint64_t offset, uint64_t size) const;

  /// Reads exactly `size` bytes at `offset` into `out`; `what` ("tensor 'w'") names them in
  /// the error when the file cannot be read or has become shorter.
  void read(uint64_t offset, uint64_t size, void* out, const std::string& what) const;
  /// The CRC32C of [offset, offset + size), streamed through a bounded buffer.
  uint32_t checksum(uint64_t offset, uint64_t size, const std::string& what) const;
  /// Throws CheckpointError naming the file and `what` unless `computed == recorded`.
  void check_crc(uint32_t recorded, uint32_t computed, const std::string& what) const;

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace est::checkpoint
