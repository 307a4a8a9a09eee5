#pragma once
/// CsvReader: the rows of one CSV file (RFC 4180, as data/csv_dataset.h describes it), read
/// through a bounded buffer by libcsv. Internal to data/.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace est::data {

/// One row of a CSV file: its fields, unquoted, and the line it begins on (from 1).
struct CsvRow {
  /// The fields in file order.
  std::vector<std::string> fields;
  /// The row's first line; a quoted field with line breaks makes a row span several.
  int64_t line = 0;
};

/// "file 'path', line 3, column 2 ('b')" — how every CSV error names its place; `column` counts
/// from 0, its name comes from `names` where it has one.
std::string CsvPlace(const std::string& path, int64_t line, size_t column, const std::vector<std::string>& names);

/// Reads the rows of one CSV file in order. A stray quote (inside an unquoted field, or after
/// a closing one) and a quoted field still open at the end of the file are DataErrors naming
/// the file, the line and the column; once one is thrown every later call throws it again.
/// Not thread-safe.
class CsvReader {
 public:
  /// Opens `path`; IoError when it is missing or not a readable regular file.
  CsvReader(std::string path, char delimiter, size_t buffer_bytes);
  ~CsvReader();
  CsvReader(const CsvReader&) = delete;
  CsvReader& operator=(const CsvReader&) = delete;

  /// Reads the next row into `row` (reusing its strings) and returns true, or returns false
  /// at the end of the file.
  bool next(CsvRow* row);
  /// Moves past the next row keeping none of its fields; false at the end of the file.
  bool skip();
  /// The columns' names, for error messages.
  void set_column_names(std::vector<std::string> names);
  /// The file's path.
  const std::string& path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace est::data
