#pragma once
/// TFRecordDataset: the records of TFRecord files as a Dataset, parsed (tf.train.Example by
/// ParseExample) or as raw bytes, as tf.data.TFRecordDataset(...).map(parse) reads them.

#include <torch/arg.h>

#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/example.h"
#include "data/tfrecord.h"

namespace est::data {

/// How TFRecordDataset reads its files.
struct TFRecordDatasetOptions {
  /// How each file is read: its compression, checksums, corrupt records, buffer size.
  TORCH_ARG(TFRecordReaderOptions, reader) = {};
  /// Turns each record into an element (ParseExample(spec), ParseSequenceExample(spec) or
  /// one's own); without one an element holds the record's bytes as the uint8 [size]
  /// feature "record".
  TORCH_ARG(RecordParser, parser) = nullptr;
};

/// The records of `files`, one file after another, each streamed through the reader's
/// bounded buffer, so files of any size are read in constant memory. A missing file is an
/// IoError here; an error in a record (the reader's or the parser's) is a DataError naming
/// the file and the record's number. skip() reads record headers only (a compressed file is
/// still inflated) and parses nothing, so a restored job returns to its position quickly.
/// Dataset::auto_shard shards `files`.
Dataset TFRecordDataset(std::vector<std::string> files, TFRecordDatasetOptions options = {});

}  // namespace est::data
