#pragma once
// Small TFRecord files of numbered records for the tests of the file sources: record j of
// file i holds the decimal text of 100 * i + j, and NumberParser turns it into the scalar
// int64 feature "x", so the pipelines over these files read like test_datasets.h's Range.

#include <ATen/ATen.h>

#include <filesystem>
#include <string>
#include <vector>

#include "data/element.h"
#include "data/tfrecord.h"
#include "tests/test_util.h"

namespace est::testing {

/// `records_per_file[i]` records in file i of a fresh directory named `name`; returns the
/// files' paths, in order ("part-0.tfrecord", ...).
inline std::vector<std::string> WriteNumberedFiles(const std::string& name, const std::vector<int>& records_per_file,
                                                   data::TFRecordCompression compression = data::TFRecordCompression::kNone) {
  const std::filesystem::path dir = FreshTempDir(name);
  std::vector<std::string> files;
  for (size_t i = 0; i < records_per_file.size(); ++i) {
    files.push_back((dir / ("part-" + std::to_string(i) + ".tfrecord")).string());
    data::TFRecordWriter writer(files.back(), compression);
    for (int j = 0; j < records_per_file[i]; ++j) writer.write(std::to_string(100 * i + j));
    writer.close();
  }
  return files;
}

/// The number a record of WriteNumberedFiles holds, as the element {"x": int64 scalar}.
inline data::Element NumberParser(std::string_view record) {
  data::Element element;
  element.features["x"] = at::scalar_tensor(static_cast<int64_t>(std::stoll(std::string(record))), at::kLong);
  return element;
}

}  // namespace est::testing
