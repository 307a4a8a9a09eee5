// TFRecordDataset: a source reading the records of TFRecord files in order.

#include <ATen/ops/empty.h>

#include <cstring>
#include <filesystem>
#include <string_view>
#include <utility>

#include "common/error.h"
#include "data/dataset_node.h"
#include "data/sources/file_sequence.h"
#include "data/tfrecord_dataset.h"

namespace est::data {
namespace {

/// IoError unless `path` is a readable regular file.
void CheckRecordFile(const std::string& path) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  EST_CHECK(std::filesystem::exists(status), IoError, "TFRecordDataset: file '", path, "' does not exist");
  EST_CHECK(std::filesystem::is_regular_file(status), IoError, "TFRecordDataset: '", path,
            "' is not a regular file");
}

/// The record's bytes as the uint8 [size] feature "record".
Element RawRecord(std::string_view record) {
  Element element;
  at::Tensor bytes = at::empty({static_cast<int64_t>(record.size())}, at::kByte);
  if (!record.empty()) std::memcpy(bytes.data_ptr(), record.data(), record.size());
  element.features.emplace("record", std::move(bytes));
  return element;
}

class TFRecordSourceNode : public DatasetNode {
 public:
  TFRecordSourceNode(std::vector<std::string> files, TFRecordDatasetOptions options)
      : files_(std::move(files)), options_(std::move(options)) {}

  std::unique_ptr<Iterator> make_iterator() const override {
    return std::make_unique<RecordIterator>(self<TFRecordSourceNode>());
  }

  int64_t cardinality() const override { return kUnknownCardinality; }

  const std::vector<std::string>* files() const override { return &files_; }

  std::shared_ptr<const DatasetNode> with_files(std::vector<std::string> files) const override {
    return std::make_shared<TFRecordSourceNode>(std::move(files), options_);
  }

 private:
  class RecordIterator : public Iterator {
   public:
    explicit RecordIterator(std::shared_ptr<const TFRecordSourceNode> node)
        : node_(std::move(node)), files_(node_->files_, [options = node_->options_.reader()](const std::string& path) {
            return std::make_unique<TFRecordReader>(path, options);
          }) {}

    std::optional<Element> next() override {
      while (TFRecordReader* reader = files_.current()) {
        if (reader->next(&record_)) return element(*reader);
        files_.close_current();
      }
      return std::nullopt;
    }

    int64_t skip(int64_t count) override {
      int64_t skipped = 0;
      while (skipped < count) {
        TFRecordReader* reader = files_.current();
        if (reader == nullptr) break;
        const int64_t wanted = count - skipped;
        const int64_t moved = reader->skip(wanted);
        skipped += moved;
        if (moved < wanted) files_.close_current();
      }
      return skipped;
    }

   private:
    /// The element of the record `reader` just read.
    Element element(const TFRecordReader& reader) const {
      const RecordParser& parser = node_->options_.parser();
      if (!parser) return RawRecord(record_);
      try {
        return parser(record_);
      } catch (const DataError& e) {
        EST_THROW(DataError, "TFRecord file '", reader.path(), "': record ", reader.record_number() - 1, ": ",
                  e.what());
      }
    }

    std::shared_ptr<const TFRecordSourceNode> node_;
    FileSequence<TFRecordReader> files_;
    std::string_view record_;  ///< in the current reader's buffer
  };

  std::vector<std::string> files_;
  TFRecordDatasetOptions options_;
};

}  // namespace

Dataset TFRecordDataset(std::vector<std::string> files, TFRecordDatasetOptions options) {
  for (const std::string& file : files) CheckRecordFile(file);
  EST_CHECK(options.reader().buffer_bytes() >= 1, ConfigError, "TFRecordDataset: buffer_bytes is ",
            options.reader().buffer_bytes(), ", expected at least 1");
  return DatasetOf(std::make_shared<TFRecordSourceNode>(std::move(files), std::move(options)));
}

}  // namespace est::data
