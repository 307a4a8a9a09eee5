#pragma once
/// TFRecord files on disk: a writer that appends one record per write() and a reader that
/// streams records from a file without holding it in memory. The framing is common/tfrecord.h.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace est::tfrecord {

/// Appends records to a TFRecord file. Each record reaches the operating system in one
/// write() as it is appended, so readers see whole records at once and a process that dies
/// loses nothing it appended. Not thread-safe: callers serialize appends.
class RecordFileWriter {
 public:
  /// Creates `path`, which must not exist yet; returns null when it exists and throws
  /// IoError on any other failure.
  static std::unique_ptr<RecordFileWriter> CreateNew(const std::string& path);
  /// Opens `path` for appending, creating it when missing; throws IoError on failure.
  static std::unique_ptr<RecordFileWriter> OpenForAppend(const std::string& path);

  RecordFileWriter(const RecordFileWriter&) = delete;
  RecordFileWriter& operator=(const RecordFileWriter&) = delete;
  /// Syncs and closes the file.
  ~RecordFileWriter();

  /// Appends `data` as one record; throws IoError when the write fails.
  void append(std::string_view data);
  /// Makes every appended record durable (fsync); throws IoError on failure.
  void sync();

  /// The file's path.
  const std::string& path() const { return path_; }

 private:
  RecordFileWriter(int fd, std::string path);

  int fd_;
  std::string path_;
};

/// Reads the records of a TFRecord file in order, one at a time, through a fixed buffer, so
/// files of any size stream in bounded memory. A record's length is believed only after its
/// checksum matches and only up to the file's size, so a corrupt length never drives an
/// allocation.
class RecordFileReader {
 public:
  /// Opens `path`; throws IoError when it is missing or not a readable regular file.
  explicit RecordFileReader(const std::string& path);
  RecordFileReader(const RecordFileReader&) = delete;
  RecordFileReader& operator=(const RecordFileReader&) = delete;
  ~RecordFileReader();

  /// Sets `data` to the next record's data and returns true, or returns false at the end.
  /// A record cut short at the end of the file (a writer still appending) counts as the end;
  /// a checksum mismatch throws DataError naming the file and the record's offset, a failed
  /// read IoError.
  bool next(std::string* data);

  /// Offset of the record that the next call to next() reads.
  uint64_t offset() const { return offset_; }
  /// True when reading stopped at a record cut short.
  bool truncated() const { return truncated_; }
  /// The file's path.
  const std::string& path() const { return path_; }

 private:
  /// Reads exactly `size` bytes at the reader's position into `out`; returns how many it read
  /// (fewer only at the end of the file).
  uint64_t read(char* out, uint64_t size);
  /// The file's current size (it may grow while a writer appends).
  uint64_t file_size() const;

  std::string path_;
  int fd_ = -1;
  uint64_t offset_ = 0;
  bool truncated_ = false;
  struct Buffer;
  std::unique_ptr<Buffer> buffer_;
};

}  // namespace est::tfrecord
