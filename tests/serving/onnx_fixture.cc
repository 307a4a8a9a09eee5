// Exports models with their ONNX files for onnx_runtime_test.py: est-train's three models (the
// Fashion-MNIST CNN, the linear model, the Transformer language model, the last at opsets 17 and
// 13) and the serving tests' two regression models, each trained 2 steps on synthetic input and
// exported with ExportOptions().onnx(opset). For requests of 1, 7 and 64 examples it writes the
// inputs and Estimator::predict's answers as raw little-endian arrays, and lists everything in
// OUT_DIR/index.json:
//
//   {"models": [{"name", "export", "opset", "cases": [{"batch", "inputs": {name: {"file", "dtype",
//    "shape"}}, "expected": {name: {"file", "dtype", "shape"}}}]}]}
//
//   onnx_fixture OUT_DIR

#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "apps/est_train/models.h"
#include "tests/serving/onnx_models.h"
#include "tests/serving/serving_models.h"

namespace {
using namespace est;
namespace fs = std::filesystem;

/// A request of `examples` of the serving input `spec`: floats normal, integers in [0, 256).
at::Tensor RandomInput(const TensorSpec& spec, int64_t examples, uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<int64_t> sizes = spec.shape;
  sizes[0] = examples;
  if (at::isFloatingType(spec.dtype)) return torch::randn(sizes, torch::dtype(spec.dtype));
  return torch::randint(0, 256, sizes, torch::dtype(spec.dtype));
}

/// Writes `tensor` as `dir`/`name`.bin; returns its entry in index.json.
nlohmann::json WriteArray(const fs::path& dir, const std::string& name, const at::Tensor& tensor) {
  const at::Tensor dense = tensor.contiguous();
  const fs::path file = dir / (name + ".bin");
  std::ofstream(file, std::ios::binary)
      .write(static_cast<const char*>(dense.data_ptr()), static_cast<std::streamsize>(dense.nbytes()));
  return {{"file", file.string()}, {"dtype", DtypeName(dense.scalar_type())}, {"shape", dense.sizes().vec()}};
}

/// One model to export: how it trains and what a request holds.
struct Case {
  std::string name;
  ModelFn model_fn;
  InputFn input_fn;
  ServingInputFn serving_input;
  int64_t opset;
};

/// Training input of random examples of `serving_input`, with labels `labels`.
InputFn SyntheticInput(const ServingInputFn& serving_input, at::Tensor labels) {
  const TensorSpec spec = serving_input().inputs.at(0);
  const Features features = {{spec.name, RandomInput(spec, labels.size(0), 7)}};
  return [features, labels](Mode, const distribute::InputContext&) {
    return data::Dataset::FromTensors(features, labels).batch(8).repeat();
  };
}

/// Trains and exports `model` under `out`/`model.name`, writes its requests and answers.
nlohmann::json ExportCase(const Case& model, const fs::path& out) {
  const fs::path dir = out / model.name;
  fs::create_directories(dir);
  Estimator estimator(model.model_fn, (dir / "model").string(), testing::QuietConfig());
  estimator.train(model.input_fn, TrainOptions().max_steps(2));
  const std::string path = estimator.export_saved_model((dir / "export").string(), model.serving_input,
                                                        ExportOptions().onnx(model.opset));
  nlohmann::json entry = {
      {"name", model.name}, {"export", path}, {"opset", model.opset}, {"cases", nlohmann::json::array()}};
  const TensorSpec input = model.serving_input().inputs.at(0);
  for (int64_t batch : {1, 7, 64}) {
    const fs::path case_dir = dir / std::to_string(batch);
    fs::create_directories(case_dir);
    const Features request = {{input.name, RandomInput(input, batch, 100 + batch)}};
    nlohmann::json item = {
        {"batch", batch}, {"inputs", nlohmann::json::object()}, {"expected", nlohmann::json::object()}};
    item["inputs"][input.name] = WriteArray(case_dir, "input_" + input.name, request.at(input.name));
    for (const auto& [name, value] : testing::PredictAll(estimator, request))
      item["expected"][name] = WriteArray(case_dir, "expected_" + name, value);
    entry["cases"].push_back(item);
  }
  std::printf("exported %s (opset %lld) to %s\n", model.name.c_str(), static_cast<long long>(model.opset),
              path.c_str());
  return entry;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 2) {
    std::fprintf(stderr, "usage: onnx_fixture OUT_DIR\n");
    return 2;
  }
  const fs::path out = argv[1];
  const auto cnn = est_train::FashionMnistCnn(est_train::FashionMnistInput{}, 8, 0, est_apps::CnnLayers::kLibTorch);
  const auto linear = est_train::Linear(8);
  const auto transformer = est_train::TransformerLanguageModel("", false, 8, 0, 2);
  const InputFn transformer_input = SyntheticInput(transformer.serving_input, torch::randint(0, 256, {32, 64}));
  const std::vector<Case> cases = {
      {"fashion_mnist_cnn", cnn.model_fn, SyntheticInput(cnn.serving_input, torch::randint(0, 10, {32})),
       cnn.serving_input, 17},
      {"linear", linear.model_fn, linear.input_fn, linear.serving_input, 17},
      {"transformer_lm", transformer.model_fn, transformer_input, transformer.serving_input, 17},
      {"transformer_lm_opset13", transformer.model_fn, transformer_input, transformer.serving_input, 13},
      {"served_regression", testing::ServedRegression, testing::RegressionInput, testing::RegressionServingInput, 17},
      {"served_more_ops", testing::ServedMoreOps, testing::RegressionInput, testing::RegressionServingInput, 14},
  };
  nlohmann::json index = {{"models", nlohmann::json::array()}};
  for (const Case& model : cases) index["models"].push_back(ExportCase(model, out));
  std::ofstream(out / "index.json") << index.dump(2) << "\n";
  return 0;
} catch (const est::Error& error) {
  std::fprintf(stderr, "error: %s\n", error.what());
  return 1;
}
