#include "data/csv_examples.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "common/error.h"
#include "data/csv/csv_row_parser.h"

namespace est::data {
namespace {

/// The elements of a FixedLen shape.
int64_t Elements(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t size : shape) count *= size;
  return count;
}

/// A FixedLen feature's default as the text of a field.
std::string DefaultText(const FeatureSpec& feature) {
  const at::Tensor value = feature.default_tensor().reshape({-1});
  char text[64];
  if (feature.type() == FeatureType::kFloat32)
    std::snprintf(text, sizeof text, "%.9g", static_cast<double>(value[0].item<float>()));
  else
    std::snprintf(text, sizeof text, "%" PRId64, value[0].item<int64_t>());
  return text;
}

/// A bytes field's ids, as the feature's ids decoder writes them: int64 [values(, k)] where
/// `var_len` (no value for an empty field), else the FixedLen shape (+ [k]).
BytesDecoder IdsOfField(const FeatureSpec& feature, bool var_len) {
  const BytesToIds ids = feature.bytes_to_ids();
  std::vector<int64_t> fixed_shape = feature.shape();
  if (feature.ids_per_value() > 1) fixed_shape.push_back(feature.ids_per_value());
  const int64_t k = feature.ids_per_value();
  return [ids, k, var_len, fixed_shape](std::string_view text) {
    std::vector<int64_t> shape = fixed_shape;
    if (var_len) {
      shape = {text.empty() ? 0 : 1};
      if (k > 1) shape.push_back(k);
    }
    at::Tensor out = at::empty(shape, at::kLong);
    if (out.numel() > 0) ids(text, out.data_ptr<int64_t>());
    return out;
  };
}

/// A FixedLen bytes field decoded as ParseExample decodes it: the decoded tensor, with a leading
/// dimension of 1 for a shape of [1].
BytesDecoder DecodedField(const FeatureSpec& feature) {
  const BytesDecoder decoder = feature.bytes_decoder();
  const bool one = !feature.shape().empty();
  return [decoder, one](std::string_view text) {
    at::Tensor decoded = decoder ? decoder(text) : at::tensor(at::ArrayRef<uint8_t>(
                                                        reinterpret_cast<const uint8_t*>(text.data()), text.size()));
    return one ? decoded.unsqueeze(0) : decoded;
  };
}

/// A VarLen number feature's field: no value when empty, else one of `type`.
BytesDecoder VarLenNumber(const std::string& name, FeatureType type) {
  auto column = std::make_shared<const CsvColumn>(name, type);
  return [column, type](std::string_view text) {
    if (text.empty()) return at::empty({0}, type == FeatureType::kFloat32 ? at::kFloat : at::kLong);
    return ParseCsvField(*column, text).reshape({1});
  };
}

/// How CsvDataset reads the column of `feature`.
CsvColumn ColumnOf(const std::string& key, const FeatureSpec& feature) {
  const bool ids = static_cast<bool>(feature.bytes_to_ids());
  if (!feature.fixed_length()) {
    EST_CHECK(ids || feature.type() != FeatureType::kBytes, ConfigError, "CsvExamples: feature '", key,
              "' is VarLen bytes of a decoder of tensors; a CSV field gives a VarLen bytes feature through an ids "
              "decoder only (FeatureSpec::ids_decoder)");
    CsvColumn column(key, FeatureType::kBytes);
    column.default_value("");  // a missing field: no value
    return column.decoder(ids ? IdsOfField(feature, true) : VarLenNumber(key, feature.type()));
  }
  EST_CHECK(Elements(feature.shape()) == 1, ConfigError, "CsvExamples: feature '", key, "' is FixedLen of shape ",
            at::IntArrayRef(feature.shape()), "; a CSV field holds one value, so expected a shape of one element");
  CsvColumn column(key, feature.type());
  if (feature.type() == FeatureType::kBytes) return column.decoder(ids ? IdsOfField(feature, false) : DecodedField(feature));
  if (feature.default_tensor().defined()) column.default_value(DefaultText(feature));
  return column;
}

}  // namespace

Dataset CsvExamples(std::vector<std::string> files, const ExampleSpec& spec, const std::string& label_key,
                    CsvExamplesOptions options) {
  EST_CHECK(label_key.empty() || spec.count(label_key) == 1, ConfigError, "CsvExamples: the label '", label_key,
            "' is not a feature of the spec");
  EST_CHECK(label_key.empty() || spec.at(label_key).fixed_length(), ConfigError, "CsvExamples: the label '",
            label_key, "' is VarLen; expected a FixedLen feature (one field)");
  EST_CHECK(!options.header() || options.column_names().empty(), ConfigError,
            "CsvExamples: column_names names the columns of files without a header; these have one");
  EST_CHECK(options.header() || !options.column_names().empty(), ConfigError,
            "CsvExamples: files without a header need column_names, the name of each column in order");
  std::vector<CsvColumn> columns;
  std::vector<std::string> selected;
  for (const auto& [key, feature] : spec) {
    columns.push_back(ColumnOf(key, feature));
    if (key != label_key) selected.push_back(key);
  }
  if (!options.header()) {
    // Every column of the files, in order; those the spec does not read are not converted.
    std::vector<CsvColumn> ordered;
    for (const std::string& name : options.column_names()) {
      auto it = std::find_if(columns.begin(), columns.end(), [&](const CsvColumn& c) { return c.name() == name; });
      ordered.push_back(it != columns.end() ? *it : CsvColumn(name, FeatureType::kBytes));
    }
    for (const CsvColumn& column : columns)
      EST_CHECK(std::count(options.column_names().begin(), options.column_names().end(), column.name()) == 1,
                ConfigError, "CsvExamples: feature '", column.name(), "' is not one of column_names");
    columns = std::move(ordered);
  }
  // The shapes ParseExample gives: a FixedLen feature its shape, a VarLen one its length.
  std::map<std::string, std::vector<int64_t>> shapes;
  std::set<std::string> var_len;
  for (const auto& [key, feature] : spec) {
    if (feature.fixed_length() && feature.type() != FeatureType::kBytes) shapes.emplace(key, feature.shape());
    if (!feature.fixed_length()) var_len.insert(key);
  }
  Dataset rows = CsvDataset(std::move(files), CsvDatasetOptions()
                                                  .header(options.header())
                                                  .columns(std::move(columns))
                                                  .field_delim(options.field_delim())
                                                  .select_columns(selected)
                                                  .label_column(label_key)
                                                  .na_value(options.na_value()));
  return rows.map([shapes, var_len, label_key](Element element) {
    for (auto& [key, tensor] : element.features) {
      if (const auto shape = shapes.find(key); shape != shapes.end()) tensor = tensor.reshape(shape->second);
    }
    for (const std::string& key : var_len) {
      const at::Tensor& values = element.features.at(key);
      element.features.emplace(key + "_length", at::scalar_tensor(values.size(0), at::kLong));
    }
    if (const auto shape = shapes.find(label_key); shape != shapes.end() && element.labels.defined())
      element.labels = element.labels.reshape(shape->second);
    return element;
  });
}

}  // namespace est::data
