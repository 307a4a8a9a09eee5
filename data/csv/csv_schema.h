#pragma once
/// CsvSchema: what CsvDataset makes of each column of its files, resolved once from the
/// options and the first file's header, and shared by every iterator. Internal to data/.

#include <string>
#include <vector>

#include "data/csv/csv_reader.h"
#include "data/csv_dataset.h"

namespace est::data {

/// What becomes of a column's fields.
enum class CsvColumnRole {
  /// Nothing: the field is neither converted nor checked.
  kUnused,
  /// A feature named after the column.
  kFeature,
  /// The element's labels.
  kLabel,
};

/// One column of the files and what becomes of it.
struct CsvColumnPlan {
  /// Its name, type, default and (bytes columns: never empty) decoder.
  CsvColumn column;
  /// Whether it is a feature, the labels, or left out.
  CsvColumnRole role = CsvColumnRole::kUnused;
};

/// The columns of every file of one CsvDataset.
struct CsvSchema {
  /// Whether every file begins with a header row.
  bool header = true;
  /// The first file's header row, which every file's must equal (empty without a header).
  std::vector<std::string> header_fields;
  /// The file `header_fields` came from.
  std::string header_file;
  /// One per field of a row, in file order.
  std::vector<CsvColumnPlan> columns;
  /// The columns' names in file order, for error messages.
  std::vector<std::string> names;
  /// A field equal to this (when not empty) is missing.
  std::string na_value;
};

/// Resolves `options` against `header`, the first row of `header_file` (when options.header();
/// ignored otherwise). ConfigError for options that name columns the files lack, list a column
/// twice, give a bad default or a decoder to a numeric column; DataError for a header whose
/// names make a column used ambiguous (the same name twice) or nameless.
CsvSchema MakeCsvSchema(const CsvDatasetOptions& options, std::vector<std::string> header, std::string header_file);

/// DataError unless `row`, the first row of the file `path` (nullptr: the file has none), is
/// the schema's header.
void CheckCsvHeader(const CsvSchema& schema, const CsvRow* row, const std::string& path);

}  // namespace est::data
