#include "common/tfrecord_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/descriptor_limit.h"
#include "common/error.h"
#include "common/tfrecord.h"

namespace est::tfrecord {
namespace {

/// Bytes the reader asks the operating system for at once.
constexpr uint64_t kReadChunk = 1 << 20;

}  // namespace

std::unique_ptr<RecordFileWriter> RecordFileWriter::CreateNew(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EEXIST) return nullptr;
  if (fd < 0) EST_THROW(IoError, "cannot create record file '", path, "': ", DescribeOpenError(errno));
  return std::unique_ptr<RecordFileWriter>(new RecordFileWriter(fd, path));
}

std::unique_ptr<RecordFileWriter> RecordFileWriter::OpenForAppend(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) EST_THROW(IoError, "cannot open record file '", path, "' for appending: ", DescribeOpenError(errno));
  return std::unique_ptr<RecordFileWriter>(new RecordFileWriter(fd, path));
}

RecordFileWriter::RecordFileWriter(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}

RecordFileWriter::~RecordFileWriter() {
  ::fsync(fd_);
  ::close(fd_);
}

void RecordFileWriter::append(std::string_view data) {
  const std::string record = FrameRecord(data);
  const char* bytes = record.data();
  size_t remaining = record.size();
  while (remaining > 0) {
    const ssize_t written = ::write(fd_, bytes, remaining);
    if (written < 0) {
      if (errno == EINTR) continue;
      EST_THROW(IoError, "cannot write record file '", path_, "': ", std::strerror(errno));
    }
    bytes += written;
    remaining -= static_cast<size_t>(written);
  }
}

void RecordFileWriter::sync() {
  if (::fsync(fd_) != 0) EST_THROW(IoError, "cannot fsync record file '", path_, "': ", std::strerror(errno));
}

/// What the operating system returned and the reader has not consumed yet.
struct RecordFileReader::Buffer {
  std::vector<char> bytes = std::vector<char>(kReadChunk);
  uint64_t begin = 0;
  uint64_t end = 0;
};

RecordFileReader::RecordFileReader(const std::string& path) : path_(path), buffer_(std::make_unique<Buffer>()) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) EST_THROW(IoError, "cannot open record file '", path, "': ", DescribeOpenError(errno));
  struct stat info {};
  if (::fstat(fd_, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd_);
    EST_THROW(IoError, "cannot read record file '", path, "': not a regular file");
  }
}

RecordFileReader::~RecordFileReader() { ::close(fd_); }

uint64_t RecordFileReader::file_size() const {
  struct stat info {};
  if (::fstat(fd_, &info) != 0) EST_THROW(IoError, "cannot stat record file '", path_, "': ", std::strerror(errno));
  return static_cast<uint64_t>(info.st_size);
}

uint64_t RecordFileReader::read(char* out, uint64_t size) {
  Buffer& buffer = *buffer_;
  uint64_t done = 0;
  while (done < size) {
    if (buffer.begin == buffer.end) {
      // Large reads bypass the buffer; small ones refill it.
      char* target = size - done >= buffer.bytes.size() ? out + done : buffer.bytes.data();
      const uint64_t want = target == buffer.bytes.data() ? buffer.bytes.size() : size - done;
      const ssize_t got = ::read(fd_, target, want);
      if (got < 0) {
        if (errno == EINTR) continue;
        EST_THROW(IoError, "cannot read record file '", path_, "': ", std::strerror(errno));
      }
      if (got == 0) break;
      if (target != buffer.bytes.data()) {
        done += static_cast<uint64_t>(got);
        continue;
      }
      buffer.begin = 0;
      buffer.end = static_cast<uint64_t>(got);
    }
    const uint64_t take = std::min(size - done, buffer.end - buffer.begin);
    std::memcpy(out + done, buffer.bytes.data() + buffer.begin, take);
    buffer.begin += take;
    done += take;
  }
  return done;
}

bool RecordFileReader::next(std::string* data) {
  if (truncated_) return false;
  char header[kHeaderSize];
  const uint64_t got = read(header, kHeaderSize);
  if (got == 0) return false;
  if (got < kHeaderSize) {
    truncated_ = true;
    return false;
  }
  const uint64_t length = DecodeHeader(header, path_, offset_);
  const uint64_t size = file_size();
  const uint64_t available = size > offset_ + kHeaderSize ? size - offset_ - kHeaderSize : 0;
  if (available < kFooterSize || length > available - kFooterSize) {
    truncated_ = true;
    return false;
  }
  data->resize(length + kFooterSize);
  if (read(data->data(), length + kFooterSize) < length + kFooterSize) {
    truncated_ = true;
    return false;
  }
  CheckData(std::string_view(data->data(), length), data->data() + length, path_, offset_);
  data->resize(length);
  offset_ += kHeaderSize + length + kFooterSize;
  return true;
}

}  // namespace est::tfrecord
