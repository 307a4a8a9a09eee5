#include "data/tfrecord/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/error.h"

namespace est::data {
namespace {

class FileSource final : public ByteSource {
 public:
  FileSource(const std::string& path, size_t buffer_bytes) : path_(path), buffer_(buffer_bytes) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) EST_THROW(IoError, "cannot open TFRecord file '", path, "': ", std::strerror(errno));
    struct stat info {};
    if (::fstat(fd_, &info) != 0 || !S_ISREG(info.st_mode)) {
      ::close(fd_);
      EST_THROW(IoError, "cannot read TFRecord file '", path, "': not a regular file");
    }
    ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  }
  ~FileSource() override { ::close(fd_); }

  size_t read(char* out, size_t size) override {
    size_t done = 0;
    while (done < size) {
      if (begin_ == end_) {
        // A large read goes straight to `out`; a small one refills the buffer.
        const bool direct = size - done >= buffer_.size();
        const ssize_t got = read_some(direct ? out + done : buffer_.data(), direct ? size - done : buffer_.size());
        if (got == 0) break;
        if (direct) {
          done += static_cast<size_t>(got);
          continue;
        }
        begin_ = 0;
        end_ = static_cast<size_t>(got);
      }
      const size_t take = std::min(size - done, end_ - begin_);
      std::memcpy(out + done, buffer_.data() + begin_, take);
      begin_ += take;
      done += take;
    }
    return done;
  }

  uint64_t skip(uint64_t size) override {
    const uint64_t buffered = std::min<uint64_t>(size, end_ - begin_);
    begin_ += buffered;
    const uint64_t rest = size - buffered;
    if (rest == 0) return size;
    const off_t here = ::lseek(fd_, 0, SEEK_CUR);
    struct stat info {};
    if (here < 0 || ::fstat(fd_, &info) != 0)
      EST_THROW(IoError, "cannot seek in TFRecord file '", path_, "': ", std::strerror(errno));
    const uint64_t left = info.st_size > here ? static_cast<uint64_t>(info.st_size - here) : 0;
    const uint64_t moved = std::min(rest, left);
    if (::lseek(fd_, static_cast<off_t>(moved), SEEK_CUR) < 0)
      EST_THROW(IoError, "cannot seek in TFRecord file '", path_, "': ", std::strerror(errno));
    return buffered + moved;
  }

 private:
  ssize_t read_some(char* out, size_t size) {
    for (;;) {
      const ssize_t got = ::read(fd_, out, size);
      if (got >= 0) return got;
      if (errno != EINTR) EST_THROW(IoError, "cannot read TFRecord file '", path_, "': ", std::strerror(errno));
    }
  }

  std::string path_;
  int fd_ = -1;
  std::vector<char> buffer_;
  size_t begin_ = 0;
  size_t end_ = 0;
};

class InflatingSource final : public ByteSource {
 public:
  InflatingSource(std::unique_ptr<ByteSource> compressed, TFRecordCompression compression, size_t buffer_bytes,
                  std::string path)
      : compressed_(std::move(compressed)),
        gzip_(compression == TFRecordCompression::kGzip),
        input_(buffer_bytes),
        scratch_(buffer_bytes),
        path_(std::move(path)) {
    // 15: the largest window; +16: a gzip header and trailer instead of zlib's.
    if (inflateInit2(&stream_, gzip_ ? 15 + 16 : 15) != Z_OK)
      EST_THROW(IoError, "cannot start inflating '", path_, "': zlib has no memory");
  }
  ~InflatingSource() override { inflateEnd(&stream_); }

  size_t read(char* out, size_t size) override {
    size_t done = 0;
    while (done < size && !ended_) {
      if (stream_.avail_in == 0) {
        stream_.next_in = reinterpret_cast<Bytef*>(input_.data());
        stream_.avail_in = static_cast<uInt>(compressed_->read(input_.data(), input_.size()));
        if (stream_.avail_in == 0) {
          if (at_member_start_) {
            ended_ = true;  // the last member (or the stream) ended exactly here
            break;
          }
          EST_THROW(DataError, "TFRecord file '", path_, "': the ", gzip_ ? "GZIP" : "ZLIB",
                    " stream ends early (the file is cut short)");
        }
      }
      if (at_member_start_) at_member_start_ = false;
      stream_.next_out = reinterpret_cast<Bytef*>(out + done);
      stream_.avail_out = static_cast<uInt>(std::min<size_t>(size - done, 1u << 30));
      const uInt before = stream_.avail_out;
      const int status = inflate(&stream_, Z_NO_FLUSH);
      done += before - stream_.avail_out;
      if (status == Z_STREAM_END) {
        if (!gzip_) {
          ended_ = true;  // a zlib stream has one member; what follows is ignored, as zlib does
          break;
        }
        inflateReset(&stream_);  // another gzip member may follow
        at_member_start_ = true;
      } else if (status != Z_OK && status != Z_BUF_ERROR) {
        EST_THROW(DataError, "TFRecord file '", path_, "' is not a valid ", gzip_ ? "GZIP" : "ZLIB", " stream (",
                  stream_.msg != nullptr ? stream_.msg : "zlib error " + std::to_string(status),
                  "): is its compression right?");
      }
    }
    return done;
  }

  uint64_t skip(uint64_t size) override {
    uint64_t done = 0;
    while (done < size) {
      const size_t got = read(scratch_.data(), static_cast<size_t>(std::min<uint64_t>(size - done, scratch_.size())));
      if (got == 0) break;
      done += got;
    }
    return done;
  }

 private:
  std::unique_ptr<ByteSource> compressed_;
  const bool gzip_;
  std::vector<char> input_;
  std::vector<char> scratch_;
  std::string path_;
  z_stream stream_{};
  bool at_member_start_ = true;  ///< no byte of the current member (or stream) read yet
  bool ended_ = false;
};

}  // namespace

std::unique_ptr<ByteSource> OpenFileSource(const std::string& path, size_t buffer_bytes) {
  return std::make_unique<FileSource>(path, buffer_bytes);
}

std::unique_ptr<ByteSource> Decompress(std::unique_ptr<ByteSource> compressed, TFRecordCompression compression,
                                       size_t buffer_bytes, const std::string& path) {
  if (compression == TFRecordCompression::kNone) return compressed;
  return std::make_unique<InflatingSource>(std::move(compressed), compression, buffer_bytes, path);
}

}  // namespace est::data
