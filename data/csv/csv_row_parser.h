#pragma once
/// The element of one CSV row: its fields converted by the columns of a CsvSchema. Internal
/// to data/.

#include <ATen/core/Tensor.h>

#include <string>
#include <string_view>

#include "data/csv/csv_reader.h"
#include "data/csv/csv_schema.h"
#include "data/csv_dataset.h"
#include "data/element.h"

namespace est::data {

/// `text` as a value of `column`: a float32 or int64 scalar (spaces and tabs around the
/// number, and a leading '+', allowed), or a bytes column's decoded tensor. DataError saying
/// what was expected, without naming the place.
at::Tensor ParseCsvField(const CsvColumn& column, std::string_view text);

/// The element of `row`, a row of the file `path`: each kFeature column's value as the
/// feature of its name, the kLabel column's as the labels; an empty field, or the NA value,
/// takes the column's default. DataError naming the file, the line and the column for a
/// wrong number of fields, a missing field without a default, or a field that is not a value
/// of its column's type.
Element CsvRowToElement(const CsvSchema& schema, const CsvRow& row, const std::string& path);

}  // namespace est::data
