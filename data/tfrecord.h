#pragma once
/// TFRecord files as TensorFlow writes and reads them (tf.io.TFRecordWriter,
/// tf.data.TFRecordDataset): records framed as in common/tfrecord.h, in a plain, GZIP or ZLIB
/// file. The reader streams through bounded buffers, so files of any size read in constant
/// memory; the writer publishes its file only when closed, so no reader ever sees half of one.

#include <torch/arg.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace est::data {

/// How a TFRecord file is compressed, as TFRecordOptions' compression_type names it.
enum class TFRecordCompression { kNone, kGzip, kZlib };

/// "" or "NONE", "GZIP", "ZLIB" (any case) as TensorFlow spells them; ConfigError naming the
/// choices otherwise.
TFRecordCompression ParseTFRecordCompression(const std::string& name);
/// "NONE", "GZIP" or "ZLIB".
std::string TFRecordCompressionName(TFRecordCompression compression);

/// How a TFRecordReader reads.
struct TFRecordReaderOptions {
  /// The file's compression.
  TORCH_ARG(TFRecordCompression, compression) = TFRecordCompression::kNone;
  /// Check every record's two CRC32C checksums (a record that fails is corrupt).
  TORCH_ARG(bool, verify_checksums) = true;
  /// Skip a corrupt record (its data's checksum fails) with a warning counting them,
  /// instead of failing; a record whose length is corrupt ends the file, as nothing after
  /// it can be framed.
  TORCH_ARG(bool, skip_corrupt_records) = false;
  /// Bytes read from the file at a time (and, compressed, inflated at a time); records
  /// shorter than this are handed out without a copy.
  TORCH_ARG(int64_t, buffer_bytes) = 256 << 10;
};

/// Reads the records of one TFRecord file in order. A record cut short, or corrupt (unless
/// skipped), is a DataError naming the file, the record's number and its byte offset (in the
/// uncompressed stream of a compressed file). Not thread-safe.
class TFRecordReader {
 public:
  /// Opens `path`; IoError when it is missing or not a readable regular file, ConfigError
  /// for a buffer_bytes below 1.
  explicit TFRecordReader(std::string path, TFRecordReaderOptions options = {});
  ~TFRecordReader();
  TFRecordReader(const TFRecordReader&) = delete;
  TFRecordReader& operator=(const TFRecordReader&) = delete;

  /// Points `record` at the next record's data and returns true, or returns false at the
  /// end. The data lives in the reader's buffer (a record longer than buffer_bytes in a
  /// buffer of its own) and stays valid until the next call on this reader: no copy is made.
  bool next(std::string_view* record);
  /// Sets `record` to a copy of the next record's data and returns true, or returns false at
  /// the end.
  bool next(std::string* record);
  /// Moves past up to `count` records reading their headers only (their data is neither
  /// checked nor kept; a compressed file is still inflated); returns how many it passed.
  int64_t skip(int64_t count);
  /// Records read or skipped so far (the number of the next one).
  int64_t record_number() const;
  /// Corrupt records skipped so far (skip_corrupt_records).
  int64_t corrupt_records() const;
  /// The file's path.
  const std::string& path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Writes records into a new TFRecord file. The records go to a temporary file beside it
/// first (`<path>.tmp-<unique>`); close() syncs it and renames it to `path`, so the file
/// appears whole or not at all. An existing `path` is refused (IoError): the writer never
/// overwrites a file. Not thread-safe.
class TFRecordWriter {
 public:
  explicit TFRecordWriter(std::string path, TFRecordCompression compression = TFRecordCompression::kNone);
  /// Without close(), removes the temporary file: nothing is published.
  ~TFRecordWriter();
  TFRecordWriter(const TFRecordWriter&) = delete;
  TFRecordWriter& operator=(const TFRecordWriter&) = delete;

  /// Appends one record; IoError when the disk refuses.
  void write(std::string_view record);
  /// Finishes the compressed stream, syncs the file and publishes it at `path`.
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace est::data
