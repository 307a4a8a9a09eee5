// TFRecordReader: records framed as common/tfrecord.h has them, from a ByteSource.

#include <algorithm>
#include <cctype>
#include <optional>

#include "common/error.h"
#include "common/logging.h"
#include "common/tfrecord.h"
#include "data/tfrecord.h"
#include "data/tfrecord/byte_source.h"

namespace est::data {
namespace {

/// Data is read in pieces of this size, so a length no file backs never drives an allocation.
constexpr uint64_t kPieceBytes = 1 << 20;
/// More than any file holds, and far from where sizes overflow.
constexpr uint64_t kLongestRecord = uint64_t{1} << 56;

}  // namespace

TFRecordCompression ParseTFRecordCompression(const std::string& name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  if (upper.empty() || upper == "NONE") return TFRecordCompression::kNone;
  if (upper == "GZIP") return TFRecordCompression::kGzip;
  if (upper == "ZLIB") return TFRecordCompression::kZlib;
  EST_THROW(ConfigError, "TFRecord compression '", name, "' is not known; expected NONE (or \"\"), GZIP or ZLIB");
}

std::string TFRecordCompressionName(TFRecordCompression compression) {
  switch (compression) {
    case TFRecordCompression::kGzip:
      return "GZIP";
    case TFRecordCompression::kZlib:
      return "ZLIB";
    case TFRecordCompression::kNone:
      break;
  }
  return "NONE";
}

struct TFRecordReader::Impl {
  std::string path;
  TFRecordReaderOptions options;
  std::unique_ptr<ByteSource> source;
  int64_t record = 0;   ///< the number of the record that comes next
  uint64_t offset = 0;  ///< its byte offset (in the uncompressed stream)
  int64_t corrupt = 0;
  bool ended = false;
  std::string spill;  ///< what is longer than the source's buffer

  std::string where() const {
    return "TFRecord file '" + path + "': record " + std::to_string(record) + " at byte " + std::to_string(offset) +
           (options.compression() == TFRecordCompression::kNone ? "" : " of the inflated stream");
  }

  /// The next record's data length; nullopt at the end of the file.
  std::optional<uint64_t> read_header() {
    if (ended) return std::nullopt;
    const std::string_view header = take(tfrecord::kHeaderSize);
    if (header.empty()) {
      ended = true;
      return std::nullopt;
    }
    EST_CHECK(header.size() == tfrecord::kHeaderSize, DataError, where(), ": the file ends inside the record's header (",
              header.size(), " of ", tfrecord::kHeaderSize, " bytes): it is cut short");
    if (options.verify_checksums() && !tfrecord::HeaderChecksumMatches(header.data())) {
      const std::string hint = options.compression() == TFRecordCompression::kNone
                                   ? " (a corrupt file, not a TFRecord file, or a compressed one read as plain)"
                                   : " (a corrupt file)";
      if (!options.skip_corrupt_records()) EST_THROW(DataError, where(), ": the length's checksum does not match", hint);
      ++corrupt;
      ended = true;
      Log().warn("{}: the length's checksum does not match{}; nothing after it can be framed, so the rest of the "
                 "file is skipped ({} corrupt record(s) skipped in this file)",
                 where(), hint, corrupt);
      return std::nullopt;
    }
    const uint64_t length = tfrecord::HeaderLength(header.data());
    // Unchecked, a length may be anything; no file holds a record this long.
    EST_CHECK(length <= kLongestRecord, DataError, where(), ": the header announces ", length,
              " data bytes, more than a record can hold (a corrupt file; its checksums are not verified)");
    return length;
  }

  /// The next `size` bytes, fewer only at the end of the file: a view into the source's
  /// buffer where they fit in it, else copied, by pieces, into `spill`. Valid until the next
  /// call.
  std::string_view take(uint64_t size) {
    if (size <= source->capacity()) return source->take(static_cast<size_t>(size));
    // The string only grows (by pieces), so a length no file backs never drives an allocation;
    // a spill string reused for records of similar lengths is not zero-filled again.
    uint64_t filled = 0;
    while (filled < size) {
      const uint64_t piece = std::min(size - filled, kPieceBytes);
      if (spill.size() < filled + piece) spill.resize(filled + piece);
      const size_t got = source->read(spill.data() + filled, piece);
      filled += got;
      if (got < piece) break;
    }
    return {spill.data(), filled};
  }

  /// The data and footer of a record of `length` bytes whose header was just read.
  std::string_view read_body(uint64_t length) {
    const uint64_t total = length + tfrecord::kFooterSize;
    const std::string_view body = take(total);
    if (body.size() < total) cut_short(length, body.size());
    return body;
  }

  /// Moves past the record whose header was just read.
  void advance(uint64_t length) {
    ++record;
    offset += tfrecord::kHeaderSize + length + tfrecord::kFooterSize;
  }

  [[noreturn]] void cut_short(uint64_t length, uint64_t arrived) const {
    EST_THROW(DataError, where(), ": the file ends inside the record (its header announces ", length,
              " data bytes and a 4-byte checksum, ", arrived, " bytes follow): it is cut short");
  }
};

TFRecordReader::TFRecordReader(std::string path, TFRecordReaderOptions options) : impl_(std::make_unique<Impl>()) {
  EST_CHECK(options.buffer_bytes() >= 1, ConfigError, "TFRecordReaderOptions.buffer_bytes is ",
            options.buffer_bytes(), ", expected at least 1");
  impl_->path = std::move(path);
  impl_->options = options;
  const auto buffer = static_cast<size_t>(options.buffer_bytes());
  impl_->source = Decompress(OpenFileSource(impl_->path, buffer), options.compression(), buffer, impl_->path);
}

TFRecordReader::~TFRecordReader() = default;

bool TFRecordReader::next(std::string_view* record) {
  Impl& impl = *impl_;
  for (;;) {
    const std::optional<uint64_t> length = impl.read_header();
    if (!length) return false;
    const std::string_view body = impl.read_body(*length);
    const std::string_view data = body.substr(0, *length);
    if (impl.options.verify_checksums() && !tfrecord::DataChecksumMatches(data, body.data() + *length)) {
      if (!impl.options.skip_corrupt_records())
        EST_THROW(DataError, impl.where(), ": the data's checksum does not match (a corrupt file)");
      ++impl.corrupt;
      Log().warn("{}: the data's checksum does not match; skipped ({} corrupt record(s) skipped in this file)",
                 impl.where(), impl.corrupt);
      impl.advance(*length);
      continue;
    }
    impl.advance(*length);
    *record = data;
    return true;
  }
}

bool TFRecordReader::next(std::string* record) {
  std::string_view view;
  if (!next(&view)) return false;
  record->assign(view);
  return true;
}

int64_t TFRecordReader::skip(int64_t count) {
  Impl& impl = *impl_;
  int64_t skipped = 0;
  while (skipped < count) {
    const std::optional<uint64_t> length = impl.read_header();
    if (!length) break;
    const uint64_t total = *length + tfrecord::kFooterSize;
    const uint64_t moved = impl.source->skip(total);
    if (moved < total) impl.cut_short(*length, moved);
    impl.advance(*length);
    ++skipped;
  }
  return skipped;
}

int64_t TFRecordReader::record_number() const { return impl_->record; }
int64_t TFRecordReader::corrupt_records() const { return impl_->corrupt; }
const std::string& TFRecordReader::path() const { return impl_->path; }

}  // namespace est::data
