#pragma once
// Small CSV files for the tests of CsvDataset: any text, or numbered rows whose elements read
// like test_datasets.h's Range (the int64 feature "x", labels 10 * x).

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/csv_dataset.h"
#include "tests/test_util.h"

namespace est::testing {

/// Writes `text` to `path` byte for byte; returns the path.
inline std::string WriteCsv(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

/// `rows_per_file[i]` rows in file i of a fresh directory named `name` ("part-0.csv", ...),
/// under the header `x,y,note`: row j of file i holds x = 100 * i + j, y = 10 * x and a quoted
/// note with a delimiter, a doubled quote and a line break, so every row spans two lines.
/// Returns the files' paths, in order.
inline std::vector<std::string> WriteNumberedCsvFiles(const std::string& name, const std::vector<int>& rows_per_file) {
  const std::filesystem::path dir = FreshTempDir(name);
  std::vector<std::string> files;
  for (size_t i = 0; i < rows_per_file.size(); ++i) {
    std::string text = "x,y,note\n";
    for (int j = 0; j < rows_per_file[i]; ++j) {
      const int64_t x = 100 * static_cast<int64_t>(i) + j;
      text += std::to_string(x) + "," + std::to_string(10 * x) + ",\"row " + std::to_string(x) +
              ", \"\"quoted\"\"\nand broken\"\n";
    }
    files.push_back(WriteCsv(dir / ("part-" + std::to_string(i) + ".csv"), text));
  }
  return files;
}

/// WriteNumberedCsvFiles's files as elements {"x": int64 scalar}, labels y (int64 scalar).
inline data::Dataset NumberedCsv(std::vector<std::string> files, int64_t buffer_bytes = 256 << 10) {
  using data::CsvColumn;
  using data::FeatureType;
  return data::CsvDataset(std::move(files),
                          data::CsvDatasetOptions()
                              .columns({CsvColumn("x", FeatureType::kInt64), CsvColumn("y", FeatureType::kInt64)})
                              .select_columns({"x"})
                              .label_column("y")
                              .buffer_bytes(buffer_bytes));
}

}  // namespace est::testing
