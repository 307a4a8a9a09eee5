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

  std::string where() const {
    return "TFRecord file '" + path + "': record " + std::to_string(record) + " at byte " + std::to_string(offset) +
           (options.compression() == TFRecordCompression::kNone ? "" : " of the inflated stream");
  }

  /// The next record's data length; nullopt at the end of the file.
  std::optional<uint64_t> read_header() {
    if (ended) return std::nullopt;
    char header[tfrecord::kHeaderSize];
    const size_t got = source->read(header, sizeof header);
    if (got == 0) {
      ended = true;
      return std::nullopt;
    }
    EST_CHECK(got == sizeof header, DataError, where(), ": the file ends inside the record's header (", got, " of ",
              sizeof header, " bytes): it is cut short");
    if (options.verify_checksums() && !tfrecord::HeaderChecksumMatches(header)) {
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
    const uint64_t length = tfrecord::HeaderLength(header);
    // Unchecked, a length may be anything; no file holds a record this long.
    EST_CHECK(length <= kLongestRecord, DataError, where(), ": the header announces ", length,
              " data bytes, more than a record can hold (a corrupt file; its checksums are not verified)");
    return length;
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

bool TFRecordReader::next(std::string* record) {
  Impl& impl = *impl_;
  for (;;) {
    const std::optional<uint64_t> length = impl.read_header();
    if (!length) return false;
    const uint64_t total = *length + tfrecord::kFooterSize;
    // The string only grows (by pieces) where it is shorter than the record: a string reused
    // for records of similar lengths is not zero-filled again before each copy.
    for (uint64_t filled = 0; filled < total;) {
      const uint64_t piece = std::min(total - filled, kPieceBytes);
      if (record->size() < filled + piece) record->resize(filled + piece);
      const size_t got = impl.source->read(record->data() + filled, piece);
      if (got < piece) impl.cut_short(*length, filled + got);
      filled += piece;
    }
    const std::string_view data(record->data(), *length);
    if (impl.options.verify_checksums() && !tfrecord::DataChecksumMatches(data, record->data() + *length)) {
      if (!impl.options.skip_corrupt_records())
        EST_THROW(DataError, impl.where(), ": the data's checksum does not match (a corrupt file)");
      ++impl.corrupt;
      Log().warn("{}: the data's checksum does not match; skipped ({} corrupt record(s) skipped in this file)",
                 impl.where(), impl.corrupt);
      impl.advance(*length);
      continue;
    }
    record->resize(*length);
    impl.advance(*length);
    return true;
  }
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
