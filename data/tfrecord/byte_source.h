#pragma once
/// ByteSource: the bytes of a file in order, through a bounded buffer, and the same bytes
/// inflated from a GZIP or ZLIB file. What the TFRecord reader reads records from. Internal
/// to data/.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "data/tfrecord.h"

namespace est::data {

/// A stream of bytes read in order.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  /// Copies up to `size` bytes to `out`; fewer only at the end of the stream.
  virtual size_t read(char* out, size_t size) = 0;
  /// Moves past up to `size` bytes; fewer only at the end of the stream.
  virtual uint64_t skip(uint64_t size) = 0;
};

/// The file at `path`, read `buffer_bytes` at a time (skips seek); IoError when it is
/// missing or not a readable regular file.
std::unique_ptr<ByteSource> OpenFileSource(const std::string& path, size_t buffer_bytes);

/// `compressed` inflated (kGzip: gzip members one after another; kZlib: one zlib stream),
/// `buffer_bytes` of compressed input at a time. A stream that is not valid, or that ends
/// before its end marker, is a DataError naming `path`. kNone returns `compressed`.
std::unique_ptr<ByteSource> Decompress(std::unique_ptr<ByteSource> compressed, TFRecordCompression compression,
                                       size_t buffer_bytes, const std::string& path);

}  // namespace est::data
