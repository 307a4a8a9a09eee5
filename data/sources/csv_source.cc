// CsvDataset: a source reading the rows of CSV files in order.

#include <filesystem>
#include <utility>

#include "common/error.h"
#include "data/csv/csv_reader.h"
#include "data/csv/csv_row_parser.h"
#include "data/csv/csv_schema.h"
#include "data/csv_dataset.h"
#include "data/dataset_node.h"
#include "data/sources/file_sequence.h"

namespace est::data {
namespace {

/// IoError unless `path` is a regular file.
void CheckCsvFile(const std::string& path) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  EST_CHECK(std::filesystem::exists(status), IoError, "CsvDataset: file '", path, "' does not exist");
  EST_CHECK(std::filesystem::is_regular_file(status), IoError, "CsvDataset: '", path, "' is not a regular file");
}

/// How every file of one CsvDataset is read.
struct CsvFormat {
  std::shared_ptr<const CsvSchema> schema;
  char delimiter = ',';
  size_t buffer_bytes = 0;
};

/// A reader of `path` past its header (checked against the schema's).
std::unique_ptr<CsvReader> OpenCsvFile(const std::string& path, const CsvFormat& format) {
  auto reader = std::make_unique<CsvReader>(path, format.delimiter, format.buffer_bytes);
  if (format.schema->header) {
    CsvRow header;
    CheckCsvHeader(*format.schema, reader->next(&header) ? &header : nullptr, path);
  }
  reader->set_column_names(format.schema->names);
  return reader;
}

class CsvSourceNode : public DatasetNode {
 public:
  CsvSourceNode(std::vector<std::string> files, CsvFormat format) : files_(std::move(files)), format_(std::move(format)) {}

  std::unique_ptr<Iterator> make_iterator() const override {
    return std::make_unique<RowIterator>(self<CsvSourceNode>());
  }

  int64_t cardinality() const override { return files_.empty() ? 0 : kUnknownCardinality; }

  const std::vector<std::string>* files() const override { return &files_; }

  std::shared_ptr<const DatasetNode> with_files(std::vector<std::string> files) const override {
    return std::make_shared<CsvSourceNode>(std::move(files), format_);
  }

 private:
  class RowIterator : public Iterator {
   public:
    explicit RowIterator(std::shared_ptr<const CsvSourceNode> node)
        : node_(std::move(node)), files_(node_->files_, [format = node_->format_](const std::string& path) {
            return OpenCsvFile(path, format);
          }) {}

    std::optional<Element> next() override {
      while (CsvReader* reader = files_.current()) {
        if (reader->next(&row_)) return CsvRowToElement(*node_->format_.schema, row_, reader->path());
        files_.close_current();
      }
      return std::nullopt;
    }

    int64_t skip(int64_t count) override {
      int64_t skipped = 0;
      while (skipped < count) {
        CsvReader* reader = files_.current();
        if (reader == nullptr) break;
        if (reader->skip()) {
          ++skipped;
        } else {
          files_.close_current();
        }
      }
      return skipped;
    }

   private:
    std::shared_ptr<const CsvSourceNode> node_;
    FileSequence<CsvReader> files_;
    CsvRow row_;
  };

  std::vector<std::string> files_;
  CsvFormat format_;
};

}  // namespace

Dataset CsvDataset(std::vector<std::string> files, CsvDatasetOptions options) {
  for (const std::string& file : files) CheckCsvFile(file);
  EST_CHECK(options.buffer_bytes() >= 1, ConfigError, "CsvDataset: buffer_bytes is ", options.buffer_bytes(),
            ", expected at least 1");
  const char delimiter = options.field_delim();
  EST_CHECK(delimiter != '"' && delimiter != '\r' && delimiter != '\n', ConfigError,
            "CsvDataset: field_delim may not be a quote, CR or LF");
  CsvFormat format;
  format.delimiter = delimiter;
  format.buffer_bytes = static_cast<size_t>(options.buffer_bytes());
  // The first file's header names the columns; an empty list of files reads nothing.
  std::vector<std::string> header;
  if (options.header() && !files.empty()) {
    CsvReader reader(files.front(), delimiter, format.buffer_bytes);
    CsvRow row;
    EST_CHECK(reader.next(&row), DataError, "CsvDataset: file '", files.front(),
              "' is empty; expected a header line naming the columns (or set header(false))");
    header = std::move(row.fields);
  }
  if (!files.empty() || !options.header()) {
    const std::string header_file = files.empty() ? "" : files.front();
    format.schema = std::make_shared<const CsvSchema>(MakeCsvSchema(options, std::move(header), header_file));
  } else {
    format.schema = std::make_shared<const CsvSchema>();
  }
  return DatasetOf(std::make_shared<CsvSourceNode>(std::move(files), std::move(format)));
}

}  // namespace est::data
