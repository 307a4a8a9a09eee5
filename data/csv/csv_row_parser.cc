// The element of one CSV row.

#include "data/csv/csv_row_parser.h"

#include <ATen/ops/scalar_tensor.h>

#include <charconv>
#include <system_error>
#include <utility>

#include "common/error.h"
#include "common/quoted_text.h"

namespace est::data {
namespace {

/// `text` without the spaces and tabs around it.
std::string_view Trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

/// `text` as a T, or DataError naming `type_name`.
template <typename T>
T ParseNumber(std::string_view text, const char* type_name) {
  std::string_view number = Trimmed(text);
  if (number.size() > 1 && number[0] == '+' && number[1] != '-') number.remove_prefix(1);
  T value{};
  const char* end = number.data() + number.size();
  const auto [stop, error] = std::from_chars(number.data(), end, value);
  if (number.empty() || error != std::errc() || stop != end) {
    EST_THROW(DataError, "expected ", type_name == std::string_view("int64") ? "an " : "a ", type_name,
              ", found ", QuotedText(text), error == std::errc::result_out_of_range ? " (out of range)" : "");
  }
  return value;
}

/// The value of a field, or the column's default when the field is missing.
at::Tensor FieldValue(const CsvColumn& column, std::string_view text, const std::string& na_value) {
  const bool na = !na_value.empty() && text == na_value;
  if (!text.empty() && !na) return ParseCsvField(column, text);
  EST_CHECK(column.default_value().has_value(), DataError, "the field is ",
            na ? "the NA value " + QuotedText(na_value) : std::string("empty"), " and the column has no default_value");
  return ParseCsvField(column, *column.default_value());
}

/// DataError unless `row` has one field per column.
void CheckFieldCount(const CsvSchema& schema, const CsvRow& row, const std::string& path) {
  const size_t expected = schema.columns.size();
  const size_t found = row.fields.size();
  if (found == expected) return;
  const size_t first_wrong = std::min(found, expected);
  EST_THROW(DataError, "CsvDataset: ", CsvPlace(path, row.line, first_wrong, schema.names), ": the row has ", found,
            found == 1 ? " field" : " fields", ", expected ", expected, "; this column is ",
            found < expected ? "missing" : "one too many");
}

}  // namespace

at::Tensor ParseCsvField(const CsvColumn& column, std::string_view text) {
  switch (column.type()) {
    case FeatureType::kFloat32:
      return at::scalar_tensor(ParseNumber<float>(text, "float32"), at::kFloat);
    case FeatureType::kInt64:
      return at::scalar_tensor(ParseNumber<int64_t>(text, "int64"), at::kLong);
    case FeatureType::kBytes:
      break;
  }
  return column.decoder()(text);
}

Element CsvRowToElement(const CsvSchema& schema, const CsvRow& row, const std::string& path) {
  CheckFieldCount(schema, row, path);
  Element element;
  for (size_t i = 0; i < schema.columns.size(); ++i) {
    const CsvColumnPlan& plan = schema.columns[i];
    if (plan.role == CsvColumnRole::kUnused) continue;
    at::Tensor value;
    try {
      value = FieldValue(plan.column, row.fields[i], schema.na_value);
    } catch (const DataError& e) {
      EST_THROW(DataError, "CsvDataset: ", CsvPlace(path, row.line, i, schema.names), ": ", e.what());
    }
    if (plan.role == CsvColumnRole::kLabel) {
      element.labels = std::move(value);
    } else {
      element.features.emplace(plan.column.name(), std::move(value));
    }
  }
  return element;
}

}  // namespace est::data
