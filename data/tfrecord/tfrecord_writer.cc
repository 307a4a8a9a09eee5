// TFRecordWriter: framed records, deflated for GZIP and ZLIB files, into an AtomicFileWriter.

#include <zlib.h>

#include <filesystem>
#include <vector>

#include "common/error.h"
#include "common/file_util.h"
#include "common/tfrecord.h"
#include "data/tfrecord.h"

namespace est::data {

struct TFRecordWriter::Impl {
  std::unique_ptr<AtomicFileWriter> file;
  TFRecordCompression compression = TFRecordCompression::kNone;
  z_stream stream{};
  bool deflating = false;
  bool closed = false;
  std::vector<char> output = std::vector<char>(256 << 10);

  ~Impl() {
    if (deflating) deflateEnd(&stream);
  }

  /// Deflates `bytes` (with `flush`, Z_FINISH at the end) into the file.
  void deflate_into_file(std::string_view bytes, int flush) {
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
    stream.avail_in = static_cast<uInt>(bytes.size());
    int status = Z_OK;
    do {
      stream.next_out = reinterpret_cast<Bytef*>(output.data());
      stream.avail_out = static_cast<uInt>(output.size());
      status = deflate(&stream, flush);
      EST_CHECK(status != Z_STREAM_ERROR, IoError, "cannot compress TFRecord file '", file->path(), "'");
      file->append(output.data(), output.size() - stream.avail_out);
    } while (stream.avail_out == 0 || (flush == Z_FINISH && status != Z_STREAM_END));
  }
};

TFRecordWriter::TFRecordWriter(std::string path, TFRecordCompression compression) : impl_(std::make_unique<Impl>()) {
  std::error_code error;
  EST_CHECK(!std::filesystem::exists(path, error), IoError, "TFRecord file '", path,
            "' exists already; a TFRecordWriter never overwrites a file");
  impl_->file = std::make_unique<AtomicFileWriter>(path);
  impl_->compression = compression;
  if (compression != TFRecordCompression::kNone) {
    const int window = compression == TFRecordCompression::kGzip ? 15 + 16 : 15;
    EST_CHECK(deflateInit2(&impl_->stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, window, 8, Z_DEFAULT_STRATEGY) == Z_OK,
              IoError, "cannot start compressing TFRecord file '", path, "': zlib has no memory");
    impl_->deflating = true;
  }
}

TFRecordWriter::~TFRecordWriter() = default;  // an uncommitted AtomicFileWriter removes its file

void TFRecordWriter::write(std::string_view record) {
  EST_CHECK(!impl_->closed, ConfigError, "TFRecord file '", impl_->file->path(), "' was closed already");
  const std::string framed = tfrecord::FrameRecord(record);
  if (impl_->deflating)
    impl_->deflate_into_file(framed, Z_NO_FLUSH);
  else
    impl_->file->append(framed);
}

void TFRecordWriter::close() {
  if (impl_->closed) return;
  if (impl_->deflating) impl_->deflate_into_file({}, Z_FINISH);
  impl_->file->commit();
  impl_->closed = true;
}

}  // namespace est::data
