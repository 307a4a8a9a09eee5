// The ONNX model of an export (ExportOptions::onnx): model.onnx parses as ONNX's ModelProto with
// the signature's inputs and outputs, the opset asked for and named free dimensions; the manifest
// records it; an operator with no ONNX mapping is refused naming it; opsets out of range and
// ONNX of the weights alone are configuration errors. onnx_runtime_test.py runs the files in
// onnxruntime.

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "common/file_util.h"
#include "estimator/export/export_directory.h"
#include "estimator/export/onnx.pb.h"
#include "estimator/exporter.h"
#include "tests/apps/run_command.h"
#include "tests/serving/onnx_models.h"
#include "tests/serving/serving_models.h"

namespace onnx_export_test {
using namespace est;
namespace fs = std::filesystem;

namespace {

/// ServedRegression, with "y" passed through cosh: an operator the ONNX export does not map.
EstimatorSpec WithCosh(const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
  EstimatorSpec spec = testing::ServedRegression(features, labels, mode, ctx);
  if (mode == Mode::kPredict) spec.predictions["y"] = torch::cosh(spec.predictions["y"]);
  return spec;
}

/// An Estimator of `model_fn` trained 5 steps of ServedRegression's input.
std::unique_ptr<Estimator> Trained(const ModelFn& model_fn, const std::string& name) {
  auto estimator = std::make_unique<Estimator>(model_fn, testing::FreshTempDir(name).string(), testing::QuietConfig());
  estimator->train(testing::RegressionInput, TrainOptions().max_steps(5));
  return estimator;
}

/// The export's model.onnx, parsed.
onnx::ModelProto ReadOnnx(const std::string& path) {
  onnx::ModelProto model;
  REQUIRE(model.ParseFromString(ReadFile((fs::path(path) / "model.onnx").string())));
  return model;
}

}  // namespace

TEST_CASE("ExportOptions().onnx(17) writes model.onnx: the signature, the opset, a named batch dimension",
          "[serving][onnx]") {
  auto estimator = Trained(testing::ServedRegression, "onnx_layout");
  const std::string path = estimator->export_saved_model(estimator->model_dir() + "/export",
                                                         testing::RegressionServingInput, ExportOptions().onnx(17));
  const LoadedExport loaded = ReadExport(path);
  REQUIRE(loaded.manifest.onnx.has_value());
  CHECK(loaded.manifest.onnx->opset == 17);
  CHECK(loaded.manifest.onnx->record.file == "model.onnx");
  CHECK(loaded.manifest.onnx->record.bytes == fs::file_size(fs::path(path) / "model.onnx"));
  CHECK_NOTHROW(ReadExportFile(path, loaded.manifest.onnx->record));  // size and CRC32C as recorded
  const nlohmann::json json = nlohmann::json::parse(ReadFile((fs::path(path) / "export.json").string()));
  CHECK(json.at("onnx").at("opset") == 17);
  CHECK(json.at("onnx").at("format") == "onnx");

  const onnx::ModelProto model = ReadOnnx(path);
  CHECK(model.ir_version() == 8);
  REQUIRE(model.opset_import_size() == 1);
  CHECK(model.opset_import(0).domain().empty());
  CHECK(model.opset_import(0).version() == 17);
  CHECK(model.producer_name() == "TorchEstimator");
  const onnx::GraphProto& graph = model.graph();
  REQUIRE(graph.input_size() == 1);
  CHECK(graph.input(0).name() == "x");
  const onnx::TypeProto::Tensor& x = graph.input(0).type().tensor_type();
  CHECK(x.elem_type() == onnx::TensorProto::FLOAT);
  REQUIRE(x.shape().dim_size() == 2);
  CHECK(x.shape().dim(0).dim_param() == "batch");
  CHECK(x.shape().dim(1).dim_value() == 3);
  // The outputs in the signature's order (by name), "positive" a bool and "y" a float, both [batch].
  REQUIRE(graph.output_size() == 2);
  CHECK(graph.output(0).name() == loaded.manifest.outputs[0].name);
  CHECK(graph.output(1).name() == loaded.manifest.outputs[1].name);
  for (const onnx::ValueInfoProto& output : graph.output()) {
    INFO(output.name());
    const onnx::TypeProto::Tensor& tensor = output.type().tensor_type();
    CHECK(tensor.elem_type() == (output.name() == "y" ? onnx::TensorProto::FLOAT : onnx::TensorProto::BOOL));
    REQUIRE(tensor.shape().dim_size() == 1);
    CHECK(tensor.shape().dim(0).dim_param() == "batch");
  }
  // The weights are initializers holding the exported values.
  std::set<std::string> initializers;
  int64_t elements = 0;
  for (const onnx::TensorProto& tensor : graph.initializer()) {
    initializers.insert(tensor.name());
    int64_t count = 1;
    for (int64_t size : tensor.dims()) count *= size;
    elements += count;
    CHECK(static_cast<int64_t>(tensor.raw_data().size()) >= count);
  }
  int64_t weights = 0;
  for (const auto& [name, tensor] : loaded.weights) weights += tensor.numel();
  CHECK(elements >= weights);
  // Every node reads values made before it: graph inputs, initializers, earlier outputs.
  std::set<std::string> known(initializers);
  known.insert("x");
  for (const onnx::NodeProto& node : graph.node()) {
    for (const std::string& input : node.input()) {
      INFO(node.op_type() << " reads " << input);
      CHECK((input.empty() || known.count(input) == 1));
    }
    for (const std::string& output : node.output()) CHECK(known.insert(output).second);
  }
  CHECK(known.count("y") == 1);
  CHECK(known.count("positive") == 1);
}

TEST_CASE("the ONNX export maps layer norm, where, flatten, transposes, gelu, softmax, reductions, max",
          "[serving][onnx]") {
  auto estimator = Trained(testing::ServedMoreOps, "onnx_more_ops");
  for (int64_t opset : {13, 17}) {
    INFO("opset " << opset);
    const std::string path = estimator->export_saved_model(
        estimator->model_dir() + "/export", testing::RegressionServingInput, ExportOptions().onnx(opset));
    const onnx::ModelProto model = ReadOnnx(path);
    std::set<std::string> ops;
    for (const onnx::NodeProto& node : model.graph().node()) ops.insert(node.op_type());
    CHECK(ops.count("Where") == 1);
    CHECK(ops.count("Softmax") == 1);
    CHECK(ops.count("Erf") == 1);
    CHECK(ops.count("LayerNormalization") == (opset >= 17 ? 1 : 0));
    CHECK(ops.count("Sqrt") == (opset >= 17 ? 0 : 1));  // the layer norm computed from its formula
    CHECK(ops.count("ConstantOfShape") == 1);
    CHECK(ops.count("ArgMax") == 1);
    REQUIRE(model.graph().output_size() == 5);
    const onnx::ValueInfoProto& mixed = model.graph().output(1);  // largest_at, mixed, positive, running, y
    CHECK(mixed.name() == "mixed");
    REQUIRE(mixed.type().tensor_type().shape().dim_size() == 2);
    CHECK(mixed.type().tensor_type().shape().dim(0).dim_param() == "batch");
    CHECK(mixed.type().tensor_type().shape().dim(1).dim_value() == 3);
  }
}

TEST_CASE("an operator with no ONNX mapping is refused, naming it and its node", "[serving][onnx]") {
  auto estimator = Trained(WithCosh, "onnx_unmapped");
  const std::string error = testing::ErrorMessageOf<ModelError>([&] {
    estimator->export_saved_model(estimator->model_dir() + "/export", testing::RegressionServingInput,
                                  ExportOptions().onnx(17));
  });
  INFO(error);
  CHECK(testing::Contains(error, "aten::cosh has no ONNX mapping at opset 17"));
  CHECK(testing::Contains(error, "aten::cosh(%"));  // the program's node
  CHECK(testing::Contains(error, "export without ExportOptions::onnx"));
  CHECK(ExportVersions(estimator->model_dir() + "/export").empty());  // nothing half written
  // Without ONNX the same model exports.
  const std::string path = estimator->export_saved_model(estimator->model_dir() + "/export",
                                                         testing::RegressionServingInput);
  CHECK_FALSE(ReadExport(path).manifest.onnx.has_value());
  CHECK_FALSE(fs::exists(fs::path(path) / "model.onnx"));
}

TEST_CASE("an ONNX opset out of range, or ONNX of the weights alone, is a ConfigError", "[serving][onnx]") {
  auto estimator = Trained(testing::ServedRegression, "onnx_config");
  const std::string base = estimator->model_dir() + "/export";
  for (int64_t opset : {12, 18}) {
    const std::string error = testing::ErrorMessageOf<ConfigError>(
        [&] { estimator->export_saved_model(base, testing::RegressionServingInput, ExportOptions().onnx(opset)); });
    INFO(error);
    CHECK(testing::Contains(error, "ExportOptions::onnx is " + std::to_string(opset)));
    CHECK(testing::Contains(error, "opsets 13 to 17"));
  }
  const std::string both = testing::ErrorMessageOf<ConfigError>([&] {
    estimator->export_saved_model(base, testing::RegressionServingInput, ExportOptions().onnx(17).weights_only(true));
  });
  CHECK(testing::Contains(both, "weights alone (weights_only)"));
  CHECK(ExportVersions(base).empty());

  const std::string exporter = testing::ErrorMessageOf<ConfigError>(
      [&] { FinalExporter("final", ExporterOptions(testing::RegressionServingInput).onnx(99)); });
  CHECK(testing::Contains(exporter, "exporter 'final': ExporterOptions::onnx is 99"));
  const std::string exporter_both = testing::ErrorMessageOf<ConfigError>(
      [&] { LatestExporter("latest", ExporterOptions(testing::RegressionServingInput).onnx(17).weights_only(true)); });
  CHECK(testing::Contains(exporter_both, "exporter 'latest'"));
  CHECK(testing::Contains(exporter_both, "weights_only"));
}

TEST_CASE("an exporter with onnx writes model.onnx in every export", "[serving][onnx]") {
  auto estimator = Trained(testing::ServedRegression, "onnx_exporter");
  const ExporterPtr exporter = FinalExporter("final", ExporterOptions(testing::RegressionServingInput).onnx(15));
  const auto path = exporter->export_model(*estimator, estimator->model_dir() + "/export/final",
                                           *estimator->latest_checkpoint(), EvalResult({{"loss", 1.0}}), true);
  REQUIRE(path.has_value());
  const ExportManifest manifest = ReadExport(*path).manifest;
  REQUIRE(manifest.onnx.has_value());
  CHECK(manifest.onnx->opset == 15);
  CHECK(ReadOnnx(*path).opset_import(0).version() == 15);
}

TEST_CASE("the manifest's ONNX record reads back; a manifest without one still reads", "[serving][onnx][export]") {
  ExportManifest manifest;
  manifest.model = {"m", "1"};
  manifest.inputs = {{"x", at::kFloat, {-1, 3}}};
  manifest.outputs = {{"y", at::kFloat, {-1}}};
  manifest.program = ExportProgram{ExportFileRecord::Of("model.pt", "program bytes"), "1.13.0"};
  manifest.onnx = ExportOnnxModel{ExportFileRecord::Of("model.onnx", "onnx bytes"), 16};
  const ExportManifest back = ExportManifest::Parse(manifest.to_json(), "export.json");
  REQUIRE(back.onnx.has_value());
  CHECK(back.onnx->opset == 16);
  CHECK(back.onnx->record.file == "model.onnx");
  CHECK(back.onnx->record.bytes == 10);
  CHECK(back.onnx->record.crc32c == manifest.onnx->record.crc32c);

  manifest.onnx.reset();
  CHECK_FALSE(ExportManifest::Parse(manifest.to_json(), "export.json").onnx.has_value());

  nlohmann::json renamed = nlohmann::json::parse(ExportManifest(back).to_json());
  renamed["onnx"]["file"] = "other.onnx";
  const std::string error =
      testing::ErrorMessageOf<CheckpointError>([&] { ExportManifest::Parse(renamed.dump(), "export.json"); });
  CHECK(testing::Contains(error, "names the ONNX file 'other.onnx'; expected 'model.onnx'"));
}

}  // namespace onnx_export_test
