#pragma once
// est-train's canned-estimator spec (--model canned --spec FILE): a JSON file that says what a
// TensorFlow user says in Python to make a canned estimator and its input: the feature columns
// (spec_columns.h), the estimator and its parameters (spec_estimator.h), the label, the
// TFRecord or CSV files to train and evaluate on, and a checkpoint to warm-start from. docs/canned.md
// describes it; examples/canned/ holds one.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "apps/est_train/spec_estimator.h"
#include "data/csv_examples.h"
#include "data/tfrecord.h"

namespace est_train {

/// Where examples come from: the spec's "train" or "eval" object.
struct SpecInput {
  /// The files (TFRecord of tf.train.Examples, or CSV) that "files" (patterns) names, sorted; empty when
  /// not listed.
  std::vector<std::string> files;
  /// "batch_size", when given.
  std::optional<int64_t> batch_size;
  /// "shuffle_buffer" (training): examples shuffled among.
  int64_t shuffle_buffer = 10000;
  /// "compression_type": "" (none), "GZIP" or "ZLIB", as tf.data.TFRecordDataset takes it.
  est::data::TFRecordCompression compression = est::data::TFRecordCompression::kNone;
  /// "format": "csv" (else "tfrecord"): the files are CSV, a column per feature
  /// (data::CsvExamples), read as "header", "column_names", "field_delim" and "na_value" say.
  bool csv = false;
  est::data::CsvExamplesOptions csv_options;
};

/// A spec file read.
struct CannedSpec {
  /// The spec file.
  std::string file;
  /// The estimator, its columns and its label.
  SpecEstimator estimator;
  /// The training input.
  SpecInput train;
  /// The evaluation input.
  SpecInput eval;
};

/// Reads spec `file`: relative paths in it are taken from its folder. With `list_files` the
/// input patterns are listed (data/list_files.h), a pattern that matches nothing being a
/// DataError naming the file and the JSON path. ConfigError naming the file, the JSON path and
/// what was expected for anything else wrong.
CannedSpec ReadCannedSpec(const std::string& file, bool list_files);

}  // namespace est_train
