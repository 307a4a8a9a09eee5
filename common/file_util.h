#pragma once
/// File helpers with crash-safe semantics: a file is either absent, the old version or
/// the complete new version, never half-written.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace est {

/// Writes a file under a temporary name and renames it into place on commit():
/// the data and the directory entry are fsynced. Without commit() the temporary file is
/// removed. Temporary names are `<path>.tmp-<unique>` (see IsTemporaryFileName).
class AtomicFileWriter {
 public:
  /// Opens `<path>.tmp-<unique>` for writing; throws IoError naming the path on failure.
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  /// Appends bytes; throws IoError (disk full, I/O error) naming the path.
  void append(const void* data, size_t n);
  void append(std::string_view bytes) { append(bytes.data(), bytes.size()); }
  /// Bytes appended so far.
  uint64_t size() const { return size_; }
  /// Flushes, fsyncs, renames onto the final path and fsyncs the directory.
  void commit();
  /// The final path.
  const std::string& path() const { return path_; }

 private:
  void flush_buffer();

  std::string path_;
  std::string temp_path_;
  std::string buffer_;
  int fd_ = -1;
  uint64_t size_ = 0;
  bool committed_ = false;
};

/// Writes `contents` to `path` atomically (AtomicFileWriter in one call).
void WriteFileAtomic(const std::string& path, std::string_view contents);

/// Reads a whole file; throws IoError naming the path when it cannot be read.
std::string ReadFile(const std::string& path);

/// The final name that `name` is the temporary of, when `name` is exactly as an
/// AtomicFileWriter names its temporary (`<final>.tmp-<pid>-<hex>`); nullopt otherwise.
std::optional<std::string> TemporaryFileTarget(std::string_view name);

/// True when `name` is a temporary name of an AtomicFileWriter (TemporaryFileTarget).
bool IsTemporaryFileName(std::string_view name);

/// Removes the regular files of `dir` that are AtomicFileWriter temporaries (left by a
/// writer that crashed) of a final name that `ours` accepts; returns how many. Any other
/// file, a user's "notes.tmp-1" included, is left alone.
int RemoveTemporaryFiles(const std::string& dir, const std::function<bool(std::string_view final_name)>& ours);

/// fsyncs a directory so that renames and creations inside it are durable.
void FsyncDirectory(const std::string& dir);

/// Creates `dir` and its parents; throws IoError naming the path when it cannot.
void CreateDirectories(const std::string& dir);

}  // namespace est
