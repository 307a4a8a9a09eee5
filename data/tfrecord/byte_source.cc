#include "data/tfrecord/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#include "common/error.h"

namespace est::data {

namespace {

/// Reads land at page-aligned addresses: the kernel's copy into a destination off a 64-byte
/// boundary runs at a third of the speed on some CPUs (a Zen 3 core: 1.5 GB/s instead of
/// 4.2 GB/s from the page cache into a buffer 16 bytes past a page).
constexpr size_t kAlignment = 4096;

/// Freed storage kept for the next source of the same size, at most this many: a reader opened
/// per file would otherwise fault in (and the kernel zero) fresh pages for every file, a tenth of
/// the time of reading a 5 MB shard from the page cache.
constexpr size_t kKeptStorage = 8;

size_t RoundUp(size_t size, size_t alignment) { return (size + alignment - 1) / alignment * alignment; }

/// Storage kept for reuse: (bytes, storage) pairs.
struct KeptStorage {
  std::mutex mutex;
  std::vector<std::pair<size_t, char*>> kept;
};

KeptStorage& Kept() {
  static auto* kept = new KeptStorage;  // never destroyed: sources may close during exit
  return *kept;
}

/// Page-aligned storage of `bytes` (a multiple of kAlignment), reused where some was kept.
char* AcquireStorage(size_t bytes) {
  {
    KeptStorage& kept = Kept();
    std::lock_guard<std::mutex> lock(kept.mutex);
    for (auto it = kept.kept.begin(); it != kept.kept.end(); ++it) {
      if (it->first != bytes) continue;
      char* storage = it->second;
      kept.kept.erase(it);
      return storage;
    }
  }
  auto* storage = static_cast<char*>(std::aligned_alloc(kAlignment, bytes));
  if (storage == nullptr) throw std::bad_alloc();
  return storage;
}

}  // namespace

void ByteSource::FreeStorage::operator()(char* storage) const {
  KeptStorage& kept = Kept();
  {
    std::lock_guard<std::mutex> lock(kept.mutex);
    if (kept.kept.size() < kKeptStorage) {
      kept.kept.emplace_back(bytes, storage);
      return;
    }
  }
  std::free(storage);
}

ByteSource::ByteSource(size_t buffer_bytes)
    : capacity_(std::max<size_t>(buffer_bytes, 1)),
      headroom_(RoundUp(capacity_, kAlignment)),
      storage_(AcquireStorage(2 * headroom_), FreeStorage{2 * headroom_}) {
  begin_ = end_ = headroom_;
}

size_t ByteSource::read(char* out, size_t size) {
  size_t done = 0;
  while (done < size) {
    if (begin_ == end_) {
      // A large read goes straight to `out`; a small one refills the buffer.
      if (size - done >= capacity_) {
        const size_t got = produce(out + done, size - done);
        if (got == 0) break;
        done += got;
        continue;
      }
      begin_ = headroom_;
      end_ = headroom_ + produce(storage_.get() + headroom_, capacity_);
      if (end_ == begin_) break;
    }
    const size_t piece = std::min(size - done, end_ - begin_);
    std::memcpy(out + done, storage_.get() + begin_, piece);
    begin_ += piece;
    done += piece;
  }
  return done;
}

std::string_view ByteSource::take(size_t size) {
  EST_ASSERT(size <= capacity_, "(take of ", size, " bytes from a buffer of ", capacity_, ")");
  if (end_ - begin_ < size) {
    // What is left (less than `size` bytes) moves just before the aligned fill area, and the
    // fill area refills: the view runs on from one into the other.
    const size_t left = end_ - begin_;
    std::memmove(storage_.get() + headroom_ - left, storage_.get() + begin_, left);
    begin_ = headroom_ - left;
    end_ = headroom_;
    while (end_ - begin_ < size) {
      const size_t got = produce(storage_.get() + end_, headroom_ + capacity_ - end_);
      if (got == 0) break;
      end_ += got;
    }
  }
  const std::string_view view(storage_.get() + begin_, std::min(size, end_ - begin_));
  begin_ += view.size();
  return view;
}

uint64_t ByteSource::skip(uint64_t size) {
  const uint64_t buffered = std::min<uint64_t>(size, end_ - begin_);
  begin_ += buffered;
  return size == buffered ? size : buffered + pass(size - buffered);
}

uint64_t ByteSource::pass(uint64_t size) {
  uint64_t done = 0;
  while (done < size) {
    const size_t got =
        produce(storage_.get() + headroom_, static_cast<size_t>(std::min<uint64_t>(size - done, capacity_)));
    if (got == 0) break;
    done += got;
  }
  begin_ = end_ = headroom_;
  return done;
}

namespace {

class FileSource final : public ByteSource {
 public:
  FileSource(const std::string& path, size_t buffer_bytes) : ByteSource(buffer_bytes), path_(path) {
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

 protected:
  size_t produce(char* out, size_t size) override {
    for (;;) {
      const ssize_t got = ::read(fd_, out, size);
      if (got >= 0) return static_cast<size_t>(got);
      if (errno != EINTR) EST_THROW(IoError, "cannot read TFRecord file '", path_, "': ", std::strerror(errno));
    }
  }

  uint64_t pass(uint64_t size) override {
    const off_t here = ::lseek(fd_, 0, SEEK_CUR);
    struct stat info {};
    if (here < 0 || ::fstat(fd_, &info) != 0)
      EST_THROW(IoError, "cannot seek in TFRecord file '", path_, "': ", std::strerror(errno));
    const uint64_t left = info.st_size > here ? static_cast<uint64_t>(info.st_size - here) : 0;
    const uint64_t moved = std::min(size, left);
    if (::lseek(fd_, static_cast<off_t>(moved), SEEK_CUR) < 0)
      EST_THROW(IoError, "cannot seek in TFRecord file '", path_, "': ", std::strerror(errno));
    return moved;
  }

 private:
  std::string path_;
  int fd_ = -1;
};

class InflatingSource final : public ByteSource {
 public:
  InflatingSource(std::unique_ptr<ByteSource> compressed, TFRecordCompression compression, size_t buffer_bytes,
                  std::string path)
      : ByteSource(buffer_bytes),
        compressed_(std::move(compressed)),
        gzip_(compression == TFRecordCompression::kGzip),
        input_(buffer_bytes),
        path_(std::move(path)) {
    // 15: the largest window; +16: a gzip header and trailer instead of zlib's.
    if (inflateInit2(&stream_, gzip_ ? 15 + 16 : 15) != Z_OK)
      EST_THROW(IoError, "cannot start inflating '", path_, "': zlib has no memory");
  }
  ~InflatingSource() override { inflateEnd(&stream_); }

 protected:
  size_t produce(char* out, size_t size) override {
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

 private:
  std::unique_ptr<ByteSource> compressed_;
  const bool gzip_;
  std::vector<char> input_;
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
