#pragma once
/// ExportManifest: what an export directory says about the model it holds (its
/// `export.json`): the model's identity, the serving signature, the global step and the
/// evaluation metrics that led to it, and the weights file's size and checksum.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "estimator/export/tensor_spec.h"

namespace est {

/// The manifest's file name in an export directory.
inline constexpr const char* kExportManifestFile = "export.json";
/// The weights' file name: a name → tensor dictionary that Python's torch.load reads.
inline constexpr const char* kExportWeightsFile = "variables.pt";

/// Who made an export: a Predictor refuses one of another model.
struct ModelIdentity {
  /// The model's name ("fashion_mnist_cnn").
  std::string name;
  /// The version of its model_fn's code, as its author numbers it ("1", "2024-06-rc2").
  std::string version;

  bool operator==(const ModelIdentity& other) const { return name == other.name && version == other.version; }
  bool operator!=(const ModelIdentity& other) const { return !(*this == other); }
};

/// The contents of export.json.
struct ExportManifest {
  ModelIdentity model;
  /// The Estimator's params, which model_fn builds the model from.
  nlohmann::json params = nlohmann::json::object();
  /// The global step of the checkpoint exported.
  int64_t global_step = 0;
  /// The evaluation metrics that led to the export (empty when none did).
  std::map<std::string, double> metrics;
  /// The serving signature: what a request holds and what the model answers.
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  /// The request's one input of serialized records that the serving input parses into `inputs`
  /// (ServingInputReceiver::records_input); empty when requests carry `inputs` themselves.
  std::string records_input;
  /// The weights are the moving averages of the variables (RunConfig::moving_average).
  bool moving_averages = false;
  /// The weights file's size and CRC32C.
  uint64_t weights_bytes = 0;
  uint32_t weights_crc32c = 0;

  /// The manifest as export.json holds it.
  std::string to_json() const;
  /// Parses export.json's text; CheckpointError naming `path` and what is wrong.
  static ExportManifest Parse(const std::string& text, const std::string& path);
};

}  // namespace est
