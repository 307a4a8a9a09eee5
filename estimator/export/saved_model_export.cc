// Estimator::export_saved_model: a checkpoint's inference weights and the model's serving
// signature, written as a new export version.

#include <ATen/ATen.h>
#include <torch/types.h>
#include <torch/version.h>

#include "checkpoint/checkpoint_reader.h"
#include "common/error.h"
#include "common/logging.h"
#include "estimator/estimator_impl.h"
#include "estimator/export/example_api_outputs.h"
#include "estimator/export/export_directory.h"
#include "estimator/export/onnx_exporter.h"
#include "estimator/export/program_tracer.h"
#include "estimator/export/serving_signature.h"

namespace est {

std::string Estimator::Impl::export_saved_model(const std::string& export_dir_base,
                                                const ServingInputFn& serving_input_fn, const ExportOptions& options) {
  EST_CHECK(!export_dir_base.empty(), ConfigError, "export_saved_model: export_dir_base is empty");
  EST_CHECK(serving_input_fn != nullptr, ConfigError, "export_saved_model: serving_input_fn is empty");
  if (options.onnx()) {
    EST_CHECK(!options.weights_only(), ConfigError, "export_saved_model: ExportOptions asks for an ONNX model "
              "(onnx) of the weights alone (weights_only); the ONNX model is written from the traced program");
    CheckOnnxOpset(*options.onnx(), "export_saved_model: ExportOptions::onnx");
  }
  for (const auto& asset : options.assets()) CheckAssetName(asset.first, "export_saved_model: ExportOptions::assets:");
  auto reader = open_checkpoint(options.checkpoint_path());
  EST_CHECK(reader != nullptr, CheckpointError, "Couldn't find trained model at ", model_dir,
            "; train first or pass ExportOptions::checkpoint_path");
  const ServingInputReceiver receiver = serving_input_fn();
  ValidateServingInputReceiver(receiver);

  // The model as prediction makes it, on the CPU, from the checkpoint's variables (or their
  // moving averages); its predictions on example requests give the outputs' signature.
  const RestoreMode restore = inference_restore_mode(*reader);
  ModelContext ctx(params, c10::Device(c10::kCPU), RestoreFromCheckpoint(reader, restore));
  const int64_t global_step = reader->global_step();
  torch::NoGradGuard no_grad;
  auto predict = [&](const Features& request) {
    data::Element element;
    element.features = receiver.receiver ? receiver.receiver(request) : request;
    return CallModelFn(model_fn, element, Mode::kPredict, ctx, global_step, MixedPrecision::kNone).predictions;
  };
  ExportManifest manifest;
  manifest.model = options.model();
  manifest.params = *params;
  manifest.global_step = global_step;
  manifest.metrics = options.metrics();
  manifest.inputs = receiver.inputs;
  manifest.records_input = receiver.records_input;
  manifest.record_features = receiver.record_features;
  manifest.outputs = OutputSignature(receiver.inputs, predict);
  manifest.class_labels = options.class_labels();
  if (!manifest.class_labels.empty()) {
    const std::string classify = ClassifyOutput(manifest);
    const TensorSpec* scores = nullptr;
    for (const TensorSpec& output : manifest.outputs)
      if (output.name == classify) scores = &output;
    EST_CHECK(scores != nullptr && scores->shape.back() == static_cast<int64_t>(manifest.class_labels.size()),
              ConfigError, "export_saved_model: ExportOptions names ", manifest.class_labels.size(),
              " class_labels; expected as many as the classes of the output 'scores' or 'probabilities' (",
              scores ? scores->describe() : "model_fn predicts neither", ")");
  }
  manifest.moving_averages = restore == RestoreMode::kMovingAverages;
  std::map<std::string, at::Tensor> weights;
  for (const auto& [name, tensor] : ctx.variables()) weights.emplace(name, tensor);
  std::map<std::string, std::string> files;
  for (const auto& [name, contents] : options.assets()) {
    const std::string file = std::string(kExportAssetsDir) + "/" + name;
    manifest.assets.push_back(ExportFileRecord::Of(file, contents));
    files.emplace(file, contents);
  }
  if (!options.weights_only()) {
    std::string program = TraceProgram(receiver.inputs, ctx.variables(), predict);
    manifest.program = ExportProgram{ExportFileRecord::Of(kExportProgramFile, program), TORCH_VERSION};
    if (options.onnx()) {
      std::string onnx = ExportOnnx(program, manifest.inputs, manifest.outputs, *options.onnx());
      manifest.onnx = ExportOnnxModel{ExportFileRecord::Of(kExportOnnxFile, onnx), *options.onnx()};
      files.emplace(kExportOnnxFile, std::move(onnx));
    }
    files.emplace(kExportProgramFile, std::move(program));
  }
  const std::string path = WriteExport(export_dir_base, manifest, weights, files);
  Log().info("Exported {} at global step {} to {}{}", reader->prefix(), global_step, path,
             manifest.onnx      ? " (weights, traced program and ONNX model)"
             : manifest.program ? " (weights and traced program)"
                                : " (weights only)");
  return path;
}

}  // namespace est
