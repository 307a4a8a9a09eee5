#pragma once
/// CsvDataset: the rows of CSV files as a Dataset, as tf.data.experimental.CsvDataset and
/// make_csv_dataset read them: one element per row, each selected column a scalar feature
/// named after it, and one column, when asked, the element's labels.
///
/// The format is RFC 4180's: fields split by a delimiter, rows by LF or CRLF; a field in
/// double quotes may hold delimiters, line breaks and doubled quotes (`"say ""hi"""`); a
/// quote anywhere else in a field is an error. Fields are taken as they are (no spaces are
/// trimmed, except around numbers), blank lines are skipped, and a UTF-8 byte order mark at
/// the start of a file is ignored. Files are parsed by libcsv (Debian's libcsv-dev).

#include <torch/arg.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "data/dataset.h"
#include "data/example.h"

namespace est::data {

/// How CsvDataset reads one column of the files.
struct CsvColumn {
  /// A column named `name` (as the header names it) holding `type` values.
  explicit CsvColumn(std::string name, FeatureType type = FeatureType::kFloat32)
      : name_(std::move(name)), type_(type) {}

  /// The column's name: the feature's key, and how select_columns and label_column name it.
  TORCH_ARG(std::string, name);
  /// The kind of values: a float32 or int64 scalar, or bytes turned into a tensor by `decoder`.
  TORCH_ARG(FeatureType, type);
  /// The text an empty field (or one equal to the NA value) is read as, parsed as the
  /// column's type (a bad default is a ConfigError when the Dataset is made). Without one,
  /// such a field in a selected column is a DataError.
  TORCH_ARG(std::optional<std::string>, default_value) = std::nullopt;
  /// How a bytes column's field becomes a tensor (DecodeRaw, or one's own); by default its
  /// bytes as a uint8 [size] tensor. Bytes columns only.
  TORCH_ARG(BytesDecoder, decoder) = nullptr;
};

/// How CsvDataset reads its files.
struct CsvDatasetOptions {
  /// The first row of every file names the columns (and must be the same in every file).
  TORCH_ARG(bool, header) = true;
  /// The columns' types and defaults. With a header: any of the header's columns, by name,
  /// in any order; a column not listed is float32 without a default. Without a header:
  /// every column of the files, in order (their names key the features).
  TORCH_ARG(std::vector<CsvColumn>, columns) = {};
  /// The character between fields (not a quote, CR or LF).
  TORCH_ARG(char, field_delim) = ',';
  /// The columns that become features, by name; empty: every column but the label.
  /// Columns not selected are neither converted nor checked.
  TORCH_ARG(std::vector<std::string>, select_columns) = {};
  /// The column whose scalar becomes the element's labels (read whether or not it is
  /// selected); empty: elements have no labels.
  TORCH_ARG(std::string, label_column) = "";
  /// A field equal to this text is missing, as an empty one is (empty: none but the empty).
  TORCH_ARG(std::string, na_value) = "";
  /// Bytes read from a file at a time. A row may be longer: it is kept whole, so memory is
  /// bounded by this buffer plus the longest row.
  TORCH_ARG(int64_t, buffer_bytes) = 256 << 10;
};

/// The rows of `files`, one file after another, each streamed through a bounded buffer, so
/// files of any size are read in constant memory. Each element holds every selected column
/// as a feature (a float32 or int64 scalar, or a bytes column's decoded tensor) and the
/// label column's scalar as labels. A missing file is an IoError here; bad options (an
/// unknown column name, a bad default) a ConfigError here; with a header, the first file's
/// header is read here, and an empty first file is a DataError. A malformed row (a wrong
/// number of fields, a field that is not a number of its column's type, a missing field
/// without a default, a stray or unterminated quote) and a header unlike the first file's
/// are DataErrors naming the file, the line and the column. skip() finds the ends of rows
/// (quotes respected) and converts nothing, so a restored job returns to its position
/// quickly. Dataset::auto_shard shards `files`.
Dataset CsvDataset(std::vector<std::string> files, CsvDatasetOptions options = {});

}  // namespace est::data
