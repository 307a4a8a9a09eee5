#pragma once
/// Internal: the files of a file source read one after another, each opened when iteration
/// reaches it and closed when it ends.

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace est::data {

/// A reader per file of `files`, one at a time, in order.
template <typename Reader>
class FileSequence {
 public:
  /// Opens one file.
  using Open = std::function<std::unique_ptr<Reader>(const std::string& path)>;

  /// `files` must outlive the sequence (a source node's list, which its iterators keep alive).
  FileSequence(const std::vector<std::string>& files, Open open) : files_(files), open_(std::move(open)) {}

  /// The open file's reader, opening the next file when none is open; nullptr after the last.
  Reader* current() {
    if (!reader_ && next_file_ < files_.size()) reader_ = open_(files_[next_file_++]);
    return reader_.get();
  }

  /// Closes the open file, which has ended; current() moves on to the next.
  void close_current() { reader_.reset(); }

 private:
  const std::vector<std::string>& files_;
  Open open_;
  size_t next_file_ = 0;
  std::unique_ptr<Reader> reader_;
};

}  // namespace est::data
