#include "estimator/export/export_manifest.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "common/crc32c.h"
#include "common/error.h"
#include "common/json_from_outside.h"

namespace est {
namespace {

/// The format's name and version in export.json; a reader refuses other versions.
constexpr const char* kFormat = "torch-estimator-export";
constexpr int kFormatVersion = 1;

nlohmann::json ToJson(const std::vector<TensorSpec>& specs) {
  nlohmann::json list = nlohmann::json::array();
  for (const TensorSpec& spec : specs)
    list.push_back({{"name", spec.name}, {"dtype", DtypeName(spec.dtype)}, {"shape", spec.shape}});
  return list;
}

std::vector<TensorSpec> SpecsFromJson(const nlohmann::json& list) {
  std::vector<TensorSpec> specs;
  for (const nlohmann::json& item : list) {
    TensorSpec spec;
    spec.name = item.at("name").get<std::string>();
    spec.dtype = ParseDtype(item.at("dtype").get<std::string>());
    spec.shape = item.at("shape").get<std::vector<int64_t>>();
    for (int64_t size : spec.shape)
      EST_CHECK(size >= -1, ConfigError, "tensor '", spec.name, "' has size ", size, "; expected -1 or more");
    specs.push_back(std::move(spec));
  }
  return specs;
}

/// [{"name", "dtype", "shape", "default": [values, row-major] or null}].
nlohmann::json RecordFeaturesJson(const std::vector<RecordFeature>& features) {
  nlohmann::json list = nlohmann::json::array();
  for (const RecordFeature& feature : features) {
    nlohmann::json values = nullptr;
    if (feature.default_value.defined()) {
      const at::Tensor flat = feature.default_value.reshape({-1}).contiguous();
      values = nlohmann::json::array();
      for (int64_t i = 0; i < flat.numel(); ++i) {
        if (feature.dtype == at::kLong)
          values.push_back(flat.data_ptr<int64_t>()[i]);
        else
          values.push_back(flat.data_ptr<float>()[i]);
      }
    }
    list.push_back({{"name", feature.name}, {"dtype", DtypeName(feature.dtype)}, {"shape", feature.shape},
                    {"default", std::move(values)}});
  }
  return list;
}

std::vector<RecordFeature> RecordFeaturesFromJson(const nlohmann::json& list) {
  std::vector<RecordFeature> features;
  for (const nlohmann::json& item : list) {
    RecordFeature feature;
    feature.name = item.at("name").get<std::string>();
    feature.dtype = ParseDtype(item.at("dtype").get<std::string>());
    EST_CHECK(feature.dtype == at::kFloat || feature.dtype == at::kLong, ConfigError, "record feature '", feature.name,
              "' is ", DtypeName(feature.dtype), "; expected float32 or int64");
    feature.shape = item.at("shape").get<std::vector<int64_t>>();
    int64_t count = 1;
    for (int64_t size : feature.shape) {
      EST_CHECK(size >= 0 && size <= (int64_t{1} << 24), ConfigError, "record feature '", feature.name, "' has size ",
                size, "; expected 0 to 2^24");
      count *= size;
      EST_CHECK(count <= (int64_t{1} << 24), ConfigError, "record feature '", feature.name, "' holds more than 2^24 values");
    }
    const nlohmann::json& values = item.at("default");
    if (!values.is_null()) {
      EST_CHECK(values.is_array() && static_cast<int64_t>(values.size()) == count, ConfigError, "record feature '",
                feature.name, "' has a default of ", values.size(), " values; its shape holds ", count);
      feature.default_value = feature.dtype == at::kLong
                                  ? at::tensor(values.get<std::vector<int64_t>>(), at::kLong).reshape(feature.shape)
                                  : at::tensor(values.get<std::vector<float>>(), at::kFloat).reshape(feature.shape);
    }
    features.push_back(std::move(feature));
  }
  return features;
}

}  // namespace

ExportFileRecord ExportFileRecord::Of(std::string file, const std::string& contents) {
  return {std::move(file), contents.size(), crc32c::Value(contents)};
}

void CheckAssetName(const std::string& name, const std::string& what) {
  const bool plain = std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
  });
  EST_CHECK(!name.empty() && name.size() <= 255 && name.front() != '.' && plain, ConfigError, what, " name '", name,
            "' is not a plain file name: expected letters, digits, '.', '_' and '-', not starting with '.'");
}

std::string ExportManifest::to_json() const {
  nlohmann::json signature = {{"inputs", ToJson(inputs)}, {"outputs", ToJson(outputs)}};
  if (!records_input.empty()) signature["records_input"] = records_input;
  if (!record_features.empty()) signature["record_features"] = RecordFeaturesJson(record_features);
  if (!class_labels.empty()) signature["class_labels"] = class_labels;
  nlohmann::json json = {
      {"format", kFormat},
      {"format_version", kFormatVersion},
      {"model", {{"name", model.name}, {"version", model.version}}},
      {"params", params},
      {"global_step", global_step},
      {"metrics", metrics},
      {"signature", signature},
      {"weights",
       {{"file", kExportWeightsFile}, {"bytes", weights_bytes}, {"crc32c", weights_crc32c},
        {"moving_averages", moving_averages}}},
  };
  if (program)
    json["program"] = {{"file", program->record.file},
                       {"bytes", program->record.bytes},
                       {"crc32c", program->record.crc32c},
                       {"format", "torchscript"},
                       {"libtorch_version", program->libtorch_version}};
  if (!assets.empty()) {
    json["assets"] = nlohmann::json::array();
    for (const ExportFileRecord& asset : assets)
      json["assets"].push_back({{"file", asset.file}, {"bytes", asset.bytes}, {"crc32c", asset.crc32c}});
  }
  if (onnx)
    json["onnx"] = {{"file", onnx->record.file},
                    {"bytes", onnx->record.bytes},
                    {"crc32c", onnx->record.crc32c},
                    {"format", "onnx"},
                    {"opset", onnx->opset}};
  return json.dump(2) + "\n";
}

ExportManifest ExportManifest::Parse(const std::string& text, const std::string& path) {
  ExportManifest manifest;
  try {
    const ParsedJson parsed = ParseJsonFromOutside(text);
    EST_CHECK(parsed.ok(), CheckpointError, "the export manifest '", path, "' cannot be read: not JSON (", parsed.error, ")");
    const nlohmann::json& json = parsed.value;
    EST_CHECK(json.value("format", "") == kFormat, CheckpointError, "'", path, "' is not a TorchEstimator export "
              "manifest (its \"format\" is not \"", kFormat, "\")");
    const int version = json.at("format_version").get<int>();
    EST_CHECK(version == kFormatVersion, CheckpointError, "'", path, "' is an export of format version ", version,
              "; this TorchEstimator reads version ", kFormatVersion);
    manifest.model.name = json.at("model").at("name").get<std::string>();
    manifest.model.version = json.at("model").at("version").get<std::string>();
    manifest.params = json.at("params");
    manifest.global_step = json.at("global_step").get<int64_t>();
    manifest.metrics = json.at("metrics").get<std::map<std::string, double>>();
    manifest.inputs = SpecsFromJson(json.at("signature").at("inputs"));
    manifest.outputs = SpecsFromJson(json.at("signature").at("outputs"));
    manifest.records_input = json.at("signature").value("records_input", "");
    if (json.at("signature").contains("record_features"))  // exports made before record_features have none
      manifest.record_features = RecordFeaturesFromJson(json.at("signature").at("record_features"));
    if (json.at("signature").contains("class_labels"))
      manifest.class_labels = json.at("signature").at("class_labels").get<std::vector<std::string>>();
    const nlohmann::json& weights = json.at("weights");
    manifest.weights_bytes = weights.at("bytes").get<uint64_t>();
    manifest.weights_crc32c = weights.at("crc32c").get<uint32_t>();
    manifest.moving_averages = weights.at("moving_averages").get<bool>();
    if (json.contains("program")) {
      const nlohmann::json& program = json.at("program");
      ExportProgram record;
      record.record.file = program.at("file").get<std::string>();
      EST_CHECK(record.record.file == kExportProgramFile, CheckpointError, "'", path, "' names the program file '",
                record.record.file, "'; expected '", kExportProgramFile, "'");
      record.record.bytes = program.at("bytes").get<uint64_t>();
      record.record.crc32c = program.at("crc32c").get<uint32_t>();
      record.libtorch_version = program.at("libtorch_version").get<std::string>();
      manifest.program = std::move(record);
    }
    if (json.contains("onnx")) {  // exports made before ExportOptions::onnx have none
      const nlohmann::json& onnx = json.at("onnx");
      ExportOnnxModel model;
      model.record.file = onnx.at("file").get<std::string>();
      EST_CHECK(model.record.file == kExportOnnxFile, CheckpointError, "'", path, "' names the ONNX file '",
                model.record.file, "'; expected '", kExportOnnxFile, "'");
      model.record.bytes = onnx.at("bytes").get<uint64_t>();
      model.record.crc32c = onnx.at("crc32c").get<uint32_t>();
      model.opset = onnx.at("opset").get<int64_t>();
      manifest.onnx = std::move(model);
    }
    if (json.contains("assets")) {  // exports made before ExportOptions::assets have none
      for (const nlohmann::json& asset : json.at("assets")) {
        ExportFileRecord record{asset.at("file").get<std::string>(), asset.at("bytes").get<uint64_t>(),
                                asset.at("crc32c").get<uint32_t>()};
        const std::string prefix = std::string(kExportAssetsDir) + "/";
        try {
          EST_CHECK(record.file.rfind(prefix, 0) == 0, ConfigError, "not in '", prefix, "'");
          CheckAssetName(record.file.substr(prefix.size()), "the asset");
        } catch (const ConfigError& e) {
          EST_THROW(CheckpointError, "'", path, "' names the asset file '", record.file, "': ", e.what());
        }
        manifest.assets.push_back(std::move(record));
      }
    }
  } catch (const CheckpointError&) {
    throw;
  } catch (const std::exception& e) {
    EST_THROW(CheckpointError, "the export manifest '", path, "' cannot be read: ", e.what());
  }
  return manifest;
}

}  // namespace est
