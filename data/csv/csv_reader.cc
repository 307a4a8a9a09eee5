// CsvReader: rows of one CSV file, parsed by libcsv in strict mode.
//
// libcsv is a push parser: it takes bytes and calls back at the end of each field and row.
// The reader feeds it one line at a time (up to and including the next CR or LF), so a row
// can only end at the end of what was fed (the reader stops there, keeping the rest of its
// buffer for the next call) and the current line number is always known.

#include "data/csv/csv_reader.h"

#include <csv.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "common/error.h"
#include "common/quoted_text.h"

namespace est::data {
namespace {

/// libcsv trims spaces and tabs around unquoted fields unless told that nothing is a space;
/// RFC 4180 keeps them.
int NothingIsSpace(unsigned char) { return 0; }

bool IsLineEnd(char c) { return c == '\n' || c == '\r'; }

}  // namespace

std::string CsvPlace(const std::string& path, int64_t line, size_t column, const std::vector<std::string>& names) {
  std::string place = Concat("file '", path, "', line ", line, ", column ", column + 1);
  if (column < names.size()) place += " (" + QuotedText(names[column]) + ")";
  return place;
}

struct CsvReader::Impl {
  std::string path;
  int fd = -1;
  std::vector<char> buffer;
  size_t begin = 0;
  size_t end = 0;
  bool started = false;   // the first bytes were read (and a byte order mark dropped)
  bool finished = false;  // the file ended and the parser was told so
  std::string error;      // the DataError thrown, thrown again by every later call
  std::vector<std::string> column_names;

  csv_parser parser{};
  int64_t line = 1;          // the line of the next byte fed
  bool row_begun = false;    // bytes of the current row were fed
  int64_t row_line = 0;      // the current row's first line
  int64_t field_line = 0;    // the current field's first line
  size_t field_count = 0;    // fields of the current row so far
  CsvRow* row = nullptr;     // where the fields go; nullptr: skipping
  bool row_done = false;

  /// libcsv's end-of-field callback.
  static void OnField(void* data, size_t size, void* self) {
    auto& impl = *static_cast<Impl*>(self);
    if (impl.row != nullptr) {
      auto& fields = impl.row->fields;
      const char* text = static_cast<const char*>(data);
      if (impl.field_count < fields.size()) {
        fields[impl.field_count].assign(text, size);
      } else {
        fields.emplace_back(text, size);
      }
    }
    ++impl.field_count;
    impl.field_line = impl.line;  // the next field begins after this one's delimiter
  }

  /// libcsv's end-of-row callback.
  static void OnRowEnd(int, void* self) {
    auto& impl = *static_cast<Impl*>(self);
    if (impl.row != nullptr) {
      impl.row->fields.resize(impl.field_count);
      impl.row->line = impl.row_line;
    }
    impl.field_count = 0;
    impl.row_begun = false;
    impl.row_done = true;
  }

  [[noreturn]] void fail(std::string message) {
    error = std::move(message);
    throw DataError(error);
  }

  /// Refills the buffer; false at the end of the file.
  bool refill() {
    begin = 0;
    end = 0;
    // The first read takes at least 3 bytes (where the file has them) to see a byte order mark.
    const size_t wanted = started ? 1 : 3;
    while (end < wanted) {
      const ssize_t got = ::read(fd, buffer.data() + end, buffer.size() - end);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) EST_THROW(IoError, "cannot read CSV file '", path, "': ", std::strerror(errno));
      if (got == 0) break;
      end += static_cast<size_t>(got);
    }
    if (!started && end >= 3 && std::memcmp(buffer.data(), "\xEF\xBB\xBF", 3) == 0) begin = 3;
    started = true;
    return begin < end;
  }

  /// Feeds the parser the buffered bytes up to and including the next line end.
  void feed_line() {
    const char* first = buffer.data() + begin;
    const char* last = buffer.data() + end;
    const char* stop = std::find_if(first, last, IsLineEnd);
    if (stop != last) ++stop;
    if (!row_begun && !IsLineEnd(*first)) {  // a blank line begins no row
      row_begun = true;
      row_line = field_line = line;
    }
    const size_t size = static_cast<size_t>(stop - first);
    const size_t parsed = csv_parse(&parser, first, size, OnField, OnRowEnd, this);
    if (parsed < size) syntax_error(first[parsed]);
    begin += size;
    if (stop[-1] == '\n') ++line;
  }

  [[noreturn]] void syntax_error(char at) {
    const std::string place = CsvPlace(path, line, field_count, column_names);
    const int status = csv_error(&parser);
    if (status != CSV_EPARSE) fail(Concat("CsvDataset: ", place, ": ", csv_strerror(status)));
    if (at == '"') {
      fail(Concat("CsvDataset: ", place,
                  ": a quote inside an unquoted field; a field holding quotes must be quoted as a whole, "
                  "each of its quotes doubled (RFC 4180)"));
    }
    fail(Concat("CsvDataset: ", place, ": ", QuotedText(std::string_view(&at, 1)),
                " after the closing quote of a quoted field; expected a delimiter or the end of the row "
                "(a quote inside a quoted field is doubled)"));
  }

  /// Tells the parser the file ended, which ends a last row without a line end.
  void finish() {
    finished = true;
    if (csv_fini(&parser, OnField, OnRowEnd, this) != 0) {
      fail(Concat("CsvDataset: ", CsvPlace(path, field_line, field_count, column_names),
                  ": a quoted field is still open at the end of the file; expected its closing quote"));
    }
  }

  /// Reads one row into `target` (nullptr: nowhere); false at the end of the file.
  bool read_row(CsvRow* target) {
    if (!error.empty()) throw DataError(error);
    if (finished) return false;
    row = target;
    row_done = false;
    while (!row_done) {
      if (begin == end && !refill()) {
        finish();
        break;
      }
      feed_line();
    }
    return row_done;
  }
};

CsvReader::CsvReader(std::string path, char delimiter, size_t buffer_bytes) : impl_(std::make_unique<Impl>()) {
  Impl& impl = *impl_;
  impl.path = std::move(path);
  impl.fd = ::open(impl.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (impl.fd < 0) EST_THROW(IoError, "cannot open CSV file '", impl.path, "': ", std::strerror(errno));
  struct stat info {};
  if (::fstat(impl.fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(impl.fd);
    EST_THROW(IoError, "cannot read CSV file '", impl.path, "': not a regular file");
  }
  ::posix_fadvise(impl.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  impl.buffer.resize(std::max<size_t>(buffer_bytes, 3));
  csv_init(&impl.parser, CSV_STRICT | CSV_STRICT_FINI);
  csv_set_delim(&impl.parser, static_cast<unsigned char>(delimiter));
  csv_set_space_func(&impl.parser, NothingIsSpace);
  // The field buffer grows by this much at a time (libcsv's default, 128 bytes, is slow for
  // long fields).
  csv_set_blk_size(&impl.parser, 4096);
}

CsvReader::~CsvReader() {
  csv_free(&impl_->parser);
  ::close(impl_->fd);
}

bool CsvReader::next(CsvRow* row) { return impl_->read_row(row); }

bool CsvReader::skip() { return impl_->read_row(nullptr); }

void CsvReader::set_column_names(std::vector<std::string> names) { impl_->column_names = std::move(names); }

const std::string& CsvReader::path() const { return impl_->path; }

}  // namespace est::data
