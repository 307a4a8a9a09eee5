#include "common/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "common/descriptor_limit.h"
#include "common/error.h"

namespace est {
namespace {

constexpr std::string_view kTempMarker = ".tmp-";
constexpr size_t kBufferSize = 1 << 20;

std::string UniqueSuffix() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t seed = std::random_device{}();
  std::ostringstream out;
  out << ::getpid() << "-" << std::hex << (seed ^ counter.fetch_add(1));
  return out.str();
}

[[noreturn]] void ThrowIo(const std::string& what, const std::string& path, int err) {
  EST_THROW(IoError, what, " '", path, "': ", DescribeOpenError(err));
}

// Writes all n bytes, retrying short writes and EINTR.
void WriteAll(int fd, const char* p, size_t n, const std::string& path) {
  while (n > 0) {
    ssize_t written = ::write(fd, p, n);
    if (written < 0) {
      if (errno == EINTR) continue;
      ThrowIo("cannot write", path, errno);
    }
    p += written;
    n -= static_cast<size_t>(written);
  }
}

std::string ParentDirectory(const std::string& path) {
  auto parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::string path)
    : path_(std::move(path)), temp_path_(path_ + std::string(kTempMarker) + UniqueSuffix()) {
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) ThrowIo("cannot create", temp_path_, errno);
  buffer_.reserve(kBufferSize);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());
}

void AtomicFileWriter::append(const void* data, size_t n) {
  EST_ASSERT(!committed_, "append after commit of ", path_);
  size_ += n;
  if (buffer_.size() + n <= kBufferSize) {
    buffer_.append(static_cast<const char*>(data), n);
    return;
  }
  flush_buffer();
  WriteAll(fd_, static_cast<const char*>(data), n, temp_path_);
}

void AtomicFileWriter::flush_buffer() {
  WriteAll(fd_, buffer_.data(), buffer_.size(), temp_path_);
  buffer_.clear();
}

void AtomicFileWriter::commit() {
  EST_ASSERT(!committed_, "double commit of ", path_);
  flush_buffer();
  if (::fsync(fd_) != 0) ThrowIo("cannot fsync", temp_path_, errno);
  if (::close(fd_) != 0) {
    fd_ = -1;
    ThrowIo("cannot close", temp_path_, errno);
  }
  fd_ = -1;
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) ThrowIo("cannot rename into", path_, errno);
  committed_ = true;
  FsyncDirectory(ParentDirectory(path_));
}

void WriteFileAtomic(const std::string& path, std::string_view contents) {
  AtomicFileWriter writer(path);
  writer.append(contents);
  writer.commit();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) ThrowIo("cannot open", path, errno);
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) ThrowIo("cannot read", path, errno);
  return out.str();
}

std::optional<std::string> TemporaryFileTarget(std::string_view name) {
  // <final>.tmp-<decimal pid>-<hex>, as UniqueSuffix() makes it.
  const size_t marker = name.rfind(kTempMarker);
  if (marker == std::string_view::npos || marker == 0) return std::nullopt;
  const std::string_view suffix = name.substr(marker + kTempMarker.size());
  const size_t dash = suffix.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == suffix.size()) return std::nullopt;
  const auto all_of = [](std::string_view text, const char* digits) {
    return text.find_first_not_of(digits) == std::string_view::npos;
  };
  if (!all_of(suffix.substr(0, dash), "0123456789") || !all_of(suffix.substr(dash + 1), "0123456789abcdef")) {
    return std::nullopt;
  }
  return std::string(name.substr(0, marker));
}

bool IsTemporaryFileName(std::string_view name) { return TemporaryFileTarget(name).has_value(); }

int RemoveTemporaryFiles(const std::string& dir, const std::function<bool(std::string_view final_name)>& ours) {
  std::error_code ec;
  int removed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file(ec) || entry.is_symlink(ec)) continue;
    const std::optional<std::string> target = TemporaryFileTarget(entry.path().filename().string());
    if (target && ours(*target) && std::filesystem::remove(entry.path(), ec)) ++removed;
  }
  return removed;
}

void FsyncDirectory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) ThrowIo("cannot open directory", dir, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL) ThrowIo("cannot fsync directory", dir, err);
}

void CreateDirectories(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) EST_THROW(IoError, "cannot create directory '", dir, "': ", ec.message());
  if (!std::filesystem::is_directory(dir, ec))
    EST_THROW(IoError, "'", dir, "' exists but is not a directory");
}

}  // namespace est
