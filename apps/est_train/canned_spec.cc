#include "apps/est_train/canned_spec.h"

#include <filesystem>
#include <set>

#include "apps/common/number_checks.h"
#include "common/error.h"
#include "data/list_files.h"

namespace est_train {
namespace {

std::string Resolved(const std::string& path, const std::filesystem::path& base_dir) {
  const std::filesystem::path given(path);
  return given.is_relative() ? (base_dir / given).string() : path;
}

SpecInput InputOf(const SpecValue& input, bool training, const std::filesystem::path& base_dir, bool list_files) {
  std::vector<std::string> keys{"files", "format", "batch_size", "compression_type", "header", "column_names",
                                "field_delim", "na_value"};
  if (training) keys.push_back("shuffle_buffer");
  input.expect_object(keys);
  SpecInput result;
  if (input.has("format")) result.csv = input.at("format").choice({"tfrecord", "csv"}) == "csv";
  for (const char* key : {"header", "column_names", "field_delim", "na_value"})
    if (!result.csv && input.has(key)) input.at(key).fail("a parameter of \"format\": \"csv\" input");
  if (result.csv && input.has("compression_type")) input.at("compression_type").fail("a parameter of TFRecord input");
  if (input.has("header")) result.csv_options.header(input.at("header").boolean());
  if (input.has("column_names")) result.csv_options.column_names(input.at("column_names").strings());
  const bool named = !result.csv_options.column_names().empty();
  if (result.csv && result.csv_options.header() == named)
    input.fail("\"header\": false needs \"column_names\", and \"column_names\" goes with \"header\": false");
  if (input.has("field_delim")) {
    const std::string delim = input.at("field_delim").string();
    if (delim.size() != 1 || delim == "\"" || delim == "\n" || delim == "\r")
      input.at("field_delim").expected("one character, not a quote or a line break");
    result.csv_options.field_delim(delim[0]);
  }
  if (input.has("na_value")) result.csv_options.na_value(input.at("na_value").string());
  if (input.has("batch_size")) result.batch_size = input.at("batch_size").integer(1, est_apps::kMaxInt64);
  if (training && input.has("shuffle_buffer"))
    result.shuffle_buffer = input.at("shuffle_buffer").integer(1, est_apps::kMaxInt64);
  if (input.has("compression_type")) {
    const SpecValue value = input.at("compression_type");
    const std::string type = value.json().is_string() ? value.json().get<std::string>() : "?";
    if (!type.empty() && type != "GZIP" && type != "ZLIB") value.expected("\"\" (none), \"GZIP\" or \"ZLIB\"");
    result.compression = type == "GZIP"   ? est::data::TFRecordCompression::kGzip
                         : type == "ZLIB" ? est::data::TFRecordCompression::kZlib
                                          : est::data::TFRecordCompression::kNone;
  }
  const SpecValue files = input.at("files");
  const std::vector<SpecValue> patterns = files.json().is_string() ? std::vector<SpecValue>{files} : files.items(1);
  std::set<std::string> seen;
  for (const SpecValue& pattern : patterns) {
    const std::string path = Resolved(pattern.string(), base_dir);
    if (!list_files) continue;
    std::vector<std::string> listed;
    try {
      listed = est::data::ListFiles(path, /*shuffle=*/false);
    } catch (const est::DataError& error) {
      throw est::DataError(est::Concat(pattern.file(), ": ", pattern.path(), ": ", error.what()));
    }
    for (std::string& file : listed)
      if (seen.insert(file).second) result.files.push_back(std::move(file));
  }
  return result;
}

est::WarmStartSettings WarmStartOf(const SpecValue& value, const std::filesystem::path& base_dir) {
  if (value.json().is_string()) return est::WarmStartSettings(Resolved(value.string(), base_dir));
  value.expect_object({"ckpt_to_initialize_from", "vars_to_warm_start", "var_name_to_prev_var_name"});
  est::WarmStartSettings settings(Resolved(value.at("ckpt_to_initialize_from").string(), base_dir));
  if (value.has("vars_to_warm_start")) settings.vars_to_warm_start(value.at("vars_to_warm_start").strings());
  if (value.has("var_name_to_prev_var_name")) {
    est::VariableRenames renames;
    for (const auto& [name, previous] : value.at("var_name_to_prev_var_name").members())
      renames.emplace(name, previous.string());
    settings.var_name_to_prev_var_name(renames);
  }
  try {
    settings.validate();
  } catch (const est::ConfigError& error) {
    value.fail(error.what());
  }
  return settings;
}

}  // namespace

CannedSpec ReadCannedSpec(const std::string& file, bool list_files) {
  const SpecValue spec = SpecValue::ReadFile(file);
  if (!spec.json().is_object()) spec.expected("an object: {\"estimator\": ..., \"columns\": ..., ...}");
  const std::filesystem::path base_dir = std::filesystem::path(file).parent_path();
  CannedSpec result;
  result.file = file;
  const SpecColumns columns(spec.has("columns") ? spec.at("columns")
                                                 : SpecValue(nlohmann::json::object(), file, "columns"),
                            base_dir.string());
  const est::WarmStartSettings warm_start =
      spec.has("warm_start_from") ? WarmStartOf(spec.at("warm_start_from"), base_dir) : est::WarmStartSettings();
  result.estimator = ReadSpecEstimator(spec, columns, warm_start);
  result.train = InputOf(spec.at("train"), /*training=*/true, base_dir, list_files);
  result.eval = InputOf(spec.at("eval"), /*training=*/false, base_dir, list_files);
  return result;
}

}  // namespace est_train
