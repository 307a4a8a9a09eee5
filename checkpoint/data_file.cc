#include "checkpoint/data_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "common/crc32c.h"
#include "common/error.h"

namespace est::checkpoint {
namespace {

/// Chunk size of checksum()'s streaming read.
constexpr uint64_t kChecksumChunk = 1 << 20;

}  // namespace

DataFile::DataFile(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  EST_CHECK(fd_ >= 0, CheckpointError, "checkpoint data file '", path_,
            "' cannot be opened: ", std::strerror(errno));
  struct stat info {};
  if (::fstat(fd_, &info) != 0) {
    const int error = errno;
    ::close(fd_);
    EST_THROW(CheckpointError, "checkpoint data file '", path_,
              "' cannot be examined: ", std::strerror(error));
  }
  size_ = static_cast<uint64_t>(info.st_size);
}

DataFile::~DataFile() {
  if (fd_ >= 0) ::close(fd_);
}

DataFile::DataFile(DataFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), size_(other.size_) {}

bool DataFile::contains(uint64_t offset, uint64_t size) const {
  return size <= size_ && offset <= size_ - size;
}

void DataFile::read(uint64_t offset, uint64_t size, void* out, const std::string& what) const {
  auto* p = static_cast<char*>(out);
  while (size > 0) {
    const ssize_t n = ::pread(fd_, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    EST_CHECK(n >= 0, CheckpointError, "checkpoint data file '", path_, "' cannot be read for ",
              what, ": ", std::strerror(errno));
    EST_CHECK(n > 0, CheckpointError, "checkpoint data file '", path_, "' ends before the bytes of ",
              what, " (truncated after it was opened)");
    p += n;
    offset += static_cast<uint64_t>(n);
    size -= static_cast<uint64_t>(n);
  }
}

uint32_t DataFile::checksum(uint64_t offset, uint64_t size, const std::string& what) const {
  std::string buffer(std::min(size, kChecksumChunk), '\0');
  uint32_t crc = 0;
  for (uint64_t done = 0; done < size;) {
    const uint64_t n = std::min<uint64_t>(size - done, buffer.size());
    read(offset + done, n, buffer.data(), what);
    crc = crc32c::Extend(crc, buffer.data(), n);
    done += n;
  }
  return crc;
}

void DataFile::check_crc(uint32_t recorded, uint32_t computed, const std::string& what) const {
  EST_CHECK(recorded == computed, CheckpointError, "checkpoint data file '", path_,
            "' is corrupt: ", what, " fails its CRC32C check (computed ", computed, ", recorded ",
            recorded, ")");
}

}  // namespace est::checkpoint
