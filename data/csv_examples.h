#pragma once
/// CsvExamples: the rows of CSV files read through an ExampleSpec, each row the element that
/// ParseExample(spec, label_key) makes of a tf.train.Example holding the row's fields, so that a
/// spec made for tf.Example records (the feature columns' make_parse_example_spec) reads CSV as
/// tf.data's make_csv_dataset feeds TensorFlow's feature columns: one value per field.

#include <string>
#include <vector>

#include <torch/arg.h>

#include "data/csv_dataset.h"
#include "data/dataset.h"
#include "data/example.h"

namespace est::data {

/// How CsvExamples reads the files (CsvDatasetOptions' meaning).
struct CsvExamplesOptions {
  /// The first row of every file names the columns; without one, column_names does.
  TORCH_ARG(bool, header) = true;
  /// The columns' names in order, for files without a header.
  TORCH_ARG(std::vector<std::string>, column_names) = {};
  /// The character between fields.
  TORCH_ARG(char, field_delim) = ',';
  /// A field equal to this text is missing, as an empty one is.
  TORCH_ARG(std::string, na_value) = "";
};

/// The rows of `files` as ParseExample(spec, label_key) parses records: a column of each
/// feature's key (other columns are not read). A FixedLen feature is one field (its shape of one
/// element), its default filling a missing field; a VarLen feature is no value for a missing
/// field and one otherwise, with `<key>_length` as ParseExample gives it; a bytes feature goes
/// through its ids decoder or decoder. A missing field of a FixedLen feature without a default is
/// a DataError naming the file, the line and the column, as is a field that is not a number of
/// its type. ConfigError for a FixedLen shape of more than one value (a field holds one), a
/// label_key that is not in `spec`, or options that do not fit (column_names with a header).
Dataset CsvExamples(std::vector<std::string> files, const ExampleSpec& spec, const std::string& label_key = "",
                    CsvExamplesOptions options = {});

}  // namespace est::data
