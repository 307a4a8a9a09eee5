// CsvSchema: the columns of a CsvDataset's files, resolved from its options and header.

#include "data/csv/csv_schema.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "common/error.h"
#include "common/quoted_text.h"
#include "data/csv/csv_row_parser.h"
#include "data/example.h"

namespace est::data {
namespace {

/// "'a', 'b', 'c'" (the first ten, then how many more).
std::string Joined(const std::vector<std::string>& names) { return QuotedList(names); }

/// Where the columns' names come from, for messages.
std::string NamesSource(const CsvSchema& schema) {
  return schema.header ? "the header of '" + schema.header_file + "'" : "CsvDatasetOptions::columns";
}

/// The index of the one column named `name`, which `option` asks for. ConfigError when no
/// column has the name, DataError when several do.
size_t ColumnNamed(const CsvSchema& schema, const std::string& name, const char* option) {
  const auto& names = schema.names;
  const auto found = std::find(names.begin(), names.end(), name);
  EST_CHECK(found != names.end(), ConfigError, "CsvDataset: ", option, " names column ", QuotedText(name), ", which ",
            NamesSource(schema), " lacks; its columns: ", Joined(names));
  const auto index = static_cast<size_t>(found - names.begin());
  const auto again = std::find(found + 1, names.end(), name);
  EST_CHECK(again == names.end(), DataError, "CsvDataset: ", option, " names column ", QuotedText(name), ", but ",
            NamesSource(schema), " has two: columns ", index + 1, " and ", again - names.begin() + 1);
  return index;
}

/// The plan of one column: a decoder for bytes, a default that parses.
void CheckColumn(CsvColumn& column) {
  if (column.type() == FeatureType::kBytes) {
    if (!column.decoder()) column.decoder(BytesAsUint8);
  } else {
    EST_CHECK(!column.decoder(), ConfigError, "CsvDataset: column '", column.name(), "' is ",
              FeatureTypeName(column.type()), "; only a bytes column takes a decoder");
  }
  if (!column.default_value()) return;
  try {
    ParseCsvField(column, *column.default_value());
  } catch (const DataError& e) {
    EST_THROW(ConfigError, "CsvDataset: column '", column.name(), "': default_value '", *column.default_value(),
              "': ", e.what());
  }
}

/// With a header: every header column, float32 unless `options` lists it.
void HeaderColumns(const CsvDatasetOptions& options, CsvSchema& schema) {
  schema.names = schema.header_fields;
  for (const std::string& name : schema.names) schema.columns.push_back({CsvColumn(name)});
  std::vector<bool> listed(schema.columns.size(), false);
  for (const CsvColumn& column : options.columns()) {
    const size_t index = ColumnNamed(schema, column.name(), "CsvDatasetOptions::columns");
    EST_CHECK(!listed[index], ConfigError, "CsvDataset: CsvDatasetOptions::columns lists column '", column.name(),
              "' twice");
    listed[index] = true;
    schema.columns[index].column = column;
  }
}

/// Without a header: the columns `options` lists.
void ListedColumns(const CsvDatasetOptions& options, CsvSchema& schema) {
  EST_CHECK(!options.columns().empty(), ConfigError,
            "CsvDataset: without a header, CsvDatasetOptions::columns must list every column of the files");
  for (const CsvColumn& column : options.columns()) {
    EST_CHECK(!column.name().empty(), ConfigError, "CsvDataset: column ", schema.names.size() + 1,
              " of CsvDatasetOptions::columns has no name");
    EST_CHECK(std::find(schema.names.begin(), schema.names.end(), column.name()) == schema.names.end(), ConfigError,
              "CsvDataset: CsvDatasetOptions::columns lists column '", column.name(), "' twice");
    schema.names.push_back(column.name());
    schema.columns.push_back({column});
  }
}

/// Marks the label column and the selected ones.
void AssignRoles(const CsvDatasetOptions& options, CsvSchema& schema) {
  if (!options.label_column().empty())
    schema.columns[ColumnNamed(schema, options.label_column(), "label_column")].role = CsvColumnRole::kLabel;
  if (!options.select_columns().empty()) {
    for (const std::string& name : options.select_columns()) {
      CsvColumnPlan& plan = schema.columns[ColumnNamed(schema, name, "select_columns")];
      if (plan.role == CsvColumnRole::kUnused) plan.role = CsvColumnRole::kFeature;
    }
    return;
  }
  std::unordered_map<std::string_view, size_t> first_of_name;  // linear in the columns: a header may have millions
  for (size_t i = 0; i < schema.columns.size(); ++i) first_of_name.emplace(schema.names[i], i);
  for (size_t i = 0; i < schema.columns.size(); ++i) {
    CsvColumnPlan& plan = schema.columns[i];
    if (plan.role != CsvColumnRole::kUnused) continue;
    const std::string& name = schema.names[i];
    EST_CHECK(!name.empty(), DataError, "CsvDataset: column ", i + 1, " has no name in ", NamesSource(schema),
              "; leave it out with select_columns");
    const size_t first = first_of_name.at(name);
    EST_CHECK(first == i, DataError, "CsvDataset: columns ", first + 1, " and ", i + 1, " of ", NamesSource(schema),
              " are both named ", QuotedText(name), "; features need distinct names (leave one out with select_columns)");
    plan.role = CsvColumnRole::kFeature;
  }
}

}  // namespace

CsvSchema MakeCsvSchema(const CsvDatasetOptions& options, std::vector<std::string> header, std::string header_file) {
  CsvSchema schema;
  schema.header = options.header();
  schema.header_file = std::move(header_file);
  schema.na_value = options.na_value();
  if (schema.header) {
    schema.header_fields = std::move(header);
    HeaderColumns(options, schema);
  } else {
    ListedColumns(options, schema);
  }
  for (CsvColumnPlan& plan : schema.columns) CheckColumn(plan.column);
  AssignRoles(options, schema);
  return schema;
}

void CheckCsvHeader(const CsvSchema& schema, const CsvRow* row, const std::string& path) {
  EST_CHECK(row != nullptr, DataError, "CsvDataset: file '", path, "' is empty; expected the header line ",
            Joined(schema.header_fields), " of '", schema.header_file, "'");
  EST_CHECK(row->fields == schema.header_fields, DataError, "CsvDataset: file '", path, "', line ", row->line,
            ": the header ", Joined(row->fields), " differs from ", Joined(schema.header_fields), ", the header of '",
            schema.header_file, "'; every file must have the first file's columns");
}

}  // namespace est::data
