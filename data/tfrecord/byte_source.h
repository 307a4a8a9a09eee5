#pragma once
/// ByteSource: the bytes of a file in order, through a bounded buffer, and the same bytes
/// inflated from a GZIP or ZLIB file. What the TFRecord reader reads records from. Internal
/// to data/.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "data/tfrecord.h"

namespace est::data {

/// A stream of bytes read in order through a buffer of fixed capacity. Subclasses produce
/// the bytes; this class hands them out as copies or as views into the buffer.
class ByteSource {
 public:
  /// A source buffering `buffer_bytes` (at least 1) at a time.
  explicit ByteSource(size_t buffer_bytes);
  virtual ~ByteSource() = default;
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  /// Copies up to `size` bytes to `out`; fewer only at the end of the stream.
  size_t read(char* out, size_t size);
  /// A view of the next `size` bytes (at most capacity()), fewer only at the end of the
  /// stream, and moves past them. The view lives in the buffer: it stays valid until the
  /// next call on this source.
  std::string_view take(size_t size);
  /// Moves past up to `size` bytes; fewer only at the end of the stream.
  uint64_t skip(uint64_t size);
  /// The most bytes take() hands out at once: the buffer's size.
  size_t capacity() const { return capacity_; }

 protected:
  /// Writes up to `size` (at least 1) bytes of the stream to `out`; 0 only at its end.
  virtual size_t produce(char* out, size_t size) = 0;
  /// Moves past up to `size` bytes not yet produced; fewer only at the end. By default
  /// produces them into the (then empty) buffer and drops them.
  virtual uint64_t pass(uint64_t size);

 private:
  /// Gives the storage back (kept for the next source of its size, or freed).
  struct FreeStorage {
    size_t bytes;
    void operator()(char* storage) const;
  };
  size_t capacity_;  ///< bytes produced into the buffer at a time
  /// The storage is a headroom of this many bytes, where what is left of the buffer moves
  /// when take() refills it, then the page-aligned fill area of capacity_ bytes.
  size_t headroom_;
  std::unique_ptr<char, FreeStorage> storage_;
  size_t begin_;  ///< the offset of the first byte not yet handed out
  size_t end_;    ///< one past the last byte produced
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
