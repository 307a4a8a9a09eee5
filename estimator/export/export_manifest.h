#pragma once
/// ExportManifest: what an export directory says about the model it holds (its
/// `export.json`): the model's identity, the serving signature, the global step and the
/// evaluation metrics that led to it, and the weights file's size and checksum.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "estimator/export/tensor_spec.h"

namespace est {

/// The manifest's file name in an export directory.
inline constexpr const char* kExportManifestFile = "export.json";
/// The weights' file name: a name → tensor dictionary that Python's torch.load reads.
inline constexpr const char* kExportWeightsFile = "variables.pt";
/// The traced program's file name: a TorchScript module that torch::jit::load and Python's
/// torch.jit.load run without the model's code.
inline constexpr const char* kExportProgramFile = "model.pt";
/// The ONNX model's file name (ExportOptions::onnx), which onnxruntime runs.
inline constexpr const char* kExportOnnxFile = "model.onnx";
/// Files of an export beside its weights, name → contents (ExportOptions::assets).
using ExportAssets = std::map<std::string, std::string>;

/// The folder of an export's assets (ExportOptions::assets), as a SavedModel's.
inline constexpr const char* kExportAssetsDir = "assets";

/// ConfigError unless `name` can name an asset: a plain file name ([A-Za-z0-9._-], not starting
/// with a dot, at most 255 characters); `what` says whose.
void CheckAssetName(const std::string& name, const std::string& what);

/// The ONNX operator sets (opsets) an export writes.
inline constexpr int64_t kOnnxMinOpset = 13;
inline constexpr int64_t kOnnxMaxOpset = 17;

/// Who made an export: a Predictor refuses one of another model.
struct ModelIdentity {
  /// The model's name ("fashion_mnist_cnn").
  std::string name;
  /// The version of its model_fn's code, as its author numbers it ("1", "2024-06-rc2").
  std::string version;

  bool operator==(const ModelIdentity& other) const { return name == other.name && version == other.version; }
  bool operator!=(const ModelIdentity& other) const { return !(*this == other); }
};

/// A file of an export beside its manifest: its name, size and CRC32C.
struct ExportFileRecord {
  std::string file;
  uint64_t bytes = 0;
  uint32_t crc32c = 0;

  /// The record of `contents` written as `file`.
  static ExportFileRecord Of(std::string file, const std::string& contents);
};

/// The traced program of an export (kExportProgramFile): model_fn's Mode::kPredict after the
/// serving input receiver, with the export's weights, as a TorchScript module. Its forward takes
/// the signature's inputs in order, by position, and returns a dictionary of the outputs by name.
struct ExportProgram {
  ExportFileRecord record;
  /// The LibTorch version that traced it ("1.13.1").
  std::string libtorch_version;
};

/// The ONNX model of an export (kExportOnnxFile): the traced program's graph in ONNX's operators,
/// its inputs and outputs the signature's, in order and by name.
struct ExportOnnxModel {
  ExportFileRecord record;
  /// The ONNX operator set it is written in (ExportOptions::onnx).
  int64_t opset = 0;
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
  /// The records' features (ServingInputReceiver::record_features), by which a server parses
  /// them without the serving input; empty when it cannot (or requests carry tensors).
  std::vector<RecordFeature> record_features;
  /// The names of the classes, in the order of a classifier's scores (ExportOptions::
  /// class_labels), which Classify answers by; empty: classes are named by their index.
  std::vector<std::string> class_labels;
  /// The weights are the moving averages of the variables (RunConfig::moving_average).
  bool moving_averages = false;
  /// The weights file's size and CRC32C.
  uint64_t weights_bytes = 0;
  uint32_t weights_crc32c = 0;
  /// The traced program; absent in an export of the weights alone (ExportOptions::weights_only).
  std::optional<ExportProgram> program;
  /// The ONNX model; absent unless the export asked for one (ExportOptions::onnx).
  std::optional<ExportOnnxModel> onnx;
  /// The files the model needs beside its weights (ExportOptions::assets), each named
  /// kExportAssetsDir + "/" + its name, as a SavedModel's assets/.
  std::vector<ExportFileRecord> assets;

  /// The manifest as export.json holds it.
  std::string to_json() const;
  /// Parses export.json's text; CheckpointError naming `path` and what is wrong.
  static ExportManifest Parse(const std::string& text, const std::string& path);
};

}  // namespace est
