// The traced program of an export (model.pt): it answers what Estimator::predict answers at any
// batch size, from C++ without the model's code and from Python's torch.jit.load; a model_fn the
// tracer cannot record is refused at export naming the output; a weights-only export and a
// corrupt program are told apart from a good one.

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "estimator/export/export_directory.h"
#include "serving/predictor.h"
#include "tests/apps/run_command.h"
#include "tests/serving/serving_models.h"
#include "tests/skip.h"

namespace traced_program_test {
using namespace est;
using serving::Predictor;
using serving::PredictorOptions;
namespace fs = std::filesystem;

namespace {

/// Estimator::predict's answers for the rows of `x`.
TensorMap EstimatorAnswers(Estimator& estimator, const at::Tensor& x) { return testing::PredictAll(estimator, {{"x", x}}); }

/// ServedRegression, but its answer's sign follows the sign of the request's sum: a branch on a value.
EstimatorSpec BranchOnValue(const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
  EstimatorSpec spec = testing::ServedRegression(features, labels, mode, ctx);
  if (mode == Mode::kPredict && features.at("x").sum().item<float>() < 0)
    spec.predictions["y"] = -spec.predictions["y"];
  return spec;
}

/// ServedRegression, reshaping its request with the batch size read in C++.
EstimatorSpec ViewWithBatchSize(const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
  const at::Tensor& x = features.at("x");
  return testing::ServedRegression({{"x", x.view({x.size(0), 3})}}, labels, mode, ctx);
}

/// An Estimator of `model_fn` trained 10 steps of ServedRegression's input.
std::unique_ptr<Estimator> Trained(const ModelFn& model_fn, const std::string& name) {
  auto estimator = std::make_unique<Estimator>(model_fn, testing::FreshTempDir(name).string(), testing::QuietConfig());
  estimator->train(testing::RegressionInput, TrainOptions().max_steps(10));
  return estimator;
}

}  // namespace

TEST_CASE("a traced program answers what Estimator::predict does at batch sizes 1, 7 and 64",
          "[serving][program]") {
  auto estimator = Trained(testing::ServedRegression, "program_equal");
  const std::string path = estimator->export_saved_model(estimator->model_dir() + "/export",
                                                         testing::RegressionServingInput);
  const ExportManifest manifest = ReadExport(path).manifest;
  REQUIRE(manifest.program.has_value());
  CHECK(manifest.program->record.file == "model.pt");
  CHECK(manifest.program->libtorch_version == TORCH_VERSION);
  CHECK(static_cast<uint64_t>(fs::file_size(fs::path(path) / "model.pt")) == manifest.program->record.bytes);

  const Predictor predictor(path);  // no model_fn
  CHECK(predictor.runs_program());
  for (int64_t batch : {1, 7, 64}) {
    INFO("batch size " << batch);
    const at::Tensor x = testing::Rows(batch == 64 ? 0 : 50, batch);
    const TensorMap served = predictor.predict({{"x", x}});
    const TensorMap expected = EstimatorAnswers(*estimator, x);
    REQUIRE(served.size() == 2);
    CHECK(served.at("y").sizes() == expected.at("y").sizes());
    CHECK(torch::allclose(served.at("y"), expected.at("y"), /*rtol=*/0, /*atol=*/1e-6));
    CHECK(torch::equal(served.at("positive"), expected.at("positive")));
  }
}

TEST_CASE("a traced program of a records export takes the parsed tensors", "[serving][program][records]") {
  auto estimator = Trained(testing::ServedRegression, "program_records");
  const std::string path = estimator->export_saved_model(estimator->model_dir() + "/export",
                                                         testing::RegressionRecordsInput);
  const Predictor predictor(path, PredictorOptions().serving_input_fn(testing::RegressionRecordsInput));
  CHECK(predictor.runs_program());
  const at::Tensor x = testing::Rows(10, 7);
  const Features parsed = predictor.parse_records(testing::ExampleRecords(x));
  CHECK(torch::allclose(predictor.predict(parsed).at("y"), EstimatorAnswers(*estimator, x).at("y"), 0, 1e-6));

  // The export records its records' features: a Predictor with no serving input parses them so.
  const Predictor alone(path);
  REQUIRE(alone.manifest().record_features.size() == 1);
  CHECK(alone.manifest().record_features.front().name == "x");
  CHECK(alone.manifest().record_features.front().shape == std::vector<int64_t>{3});
  CHECK(torch::equal(alone.predict(alone.parse_records(testing::ExampleRecords(x))).at("y"),
                     predictor.predict(parsed).at("y")));
  CHECK_THAT(testing::ErrorMessageOf<serving::RequestError>([&] { alone.parse_records({"\xff\xff"}); }),
             Catch::Contains("record 0 of input 'examples'"));
}

TEST_CASE("an export records the defaults of its records' features; one of bytes features needs its serving input",
          "[serving][program][records]") {
  auto estimator = Trained(testing::ServedRegression, "program_record_defaults");
  // "x" defaults to [1, 2, 3] where a record lacks it; "unused" is parsed and not used.
  const ServingInputFn with_defaults = [] {
    return ParsingServingInputFn(
        {{"x", data::FeatureSpec::FixedLen(data::FeatureType::kFloat32, {3}).default_value(torch::tensor({1.f, 2.f, 3.f}))},
         {"unused", data::FeatureSpec::FixedLen(data::FeatureType::kInt64, {2}).default_value(torch::tensor(7L))}})();
  };
  const std::string path = estimator->export_saved_model(estimator->model_dir() + "/export", with_defaults);
  const Predictor alone(path);
  REQUIRE(alone.manifest().record_features.size() == 2);
  CHECK(torch::equal(alone.manifest().record_features[0].default_value, torch::tensor({7L, 7L})));
  const Features parsed = alone.parse_records({std::string()});  // an empty record: every default
  CHECK(torch::equal(parsed.at("x"), torch::tensor({{1.f, 2.f, 3.f}})));
  CHECK(torch::equal(parsed.at("unused"), torch::tensor({{7L, 7L}})));

  const ServingInputFn with_bytes = [] {
    return ParsingServingInputFn(
        {{"x", data::FeatureSpec::FixedLen(data::FeatureType::kFloat32, {3})},
         {"raw", data::FeatureSpec::FixedLen(data::FeatureType::kBytes)}},
        ParsingServingInputOptions().bytes_features({{"raw", at::kByte, {-1, -1}}}))();
  };
  const std::string bytes_path = estimator->export_saved_model(estimator->model_dir() + "/export", with_bytes);
  CHECK_THAT(testing::ErrorMessageOf<CheckpointError>([&] { Predictor{bytes_path}; }),
             Catch::Contains("whose features only its serving input parses"));
}

TEST_CASE("a model_fn the tracer cannot record is refused at export, naming what differs", "[serving][program]") {
  SECTION("a branch on a value: the output that differs is named") {
    auto estimator = Trained(BranchOnValue, "program_branch");
    const std::string error = testing::ErrorMessageOf<ModelError>([&] {
      estimator->export_saved_model(estimator->model_dir() + "/export", testing::RegressionServingInput);
    });
    INFO(error);
    CHECK(testing::Contains(error, "output 'y' differs from model_fn's"));
    CHECK(testing::Contains(error, "weights_only(true)"));
    CHECK(ExportVersions(estimator->model_dir() + "/export").empty());

    // Weights alone: served with the model_fn, refused without it.
    const std::string path = estimator->export_saved_model(estimator->model_dir() + "/export",
                                                           testing::RegressionServingInput,
                                                           ExportOptions().weights_only(true));
    CHECK_FALSE(ReadExport(path).manifest.program.has_value());
    CHECK_FALSE(fs::exists(fs::path(path) / "model.pt"));
    const std::string refusal = testing::ErrorMessageOf<CheckpointError>([&] { Predictor{path}; });
    CHECK(testing::Contains(refusal, "holds weights only"));
    CHECK_FALSE(Predictor(BranchOnValue, path).runs_program());
  }
  SECTION("a size read in C++: the program fails at another batch size") {
    auto estimator = Trained(ViewWithBatchSize, "program_view");
    const std::string error = testing::ErrorMessageOf<ModelError>([&] {
      estimator->export_saved_model(estimator->model_dir() + "/export", testing::RegressionServingInput);
    });
    INFO(error);
    CHECK(testing::Contains(error, "traced into a program at batch size 3 fails at batch size 1"));
    CHECK(testing::Contains(error, "use -1 in view/reshape"));
  }
}

TEST_CASE("a corrupt or missing program is refused naming model.pt", "[serving][program]") {
  auto estimator = Trained(testing::ServedRegression, "program_corrupt");
  const std::string path = estimator->export_saved_model(estimator->model_dir() + "/export",
                                                         testing::RegressionServingInput);
  const fs::path program = fs::path(path) / "model.pt";
  SECTION("a flipped byte") {
    std::fstream file(program, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(100);
    file.put('\x7f');
    file.close();
    const std::string error = testing::ErrorMessageOf<CheckpointError>([&] { Predictor{path}; });
    CHECK(testing::Contains(error, program.string() + "' is corrupt"));
  }
  SECTION("no program file") {
    fs::remove(program);
    const std::string error = testing::ErrorMessageOf<CheckpointError>([&] { Predictor{path}; });
    CHECK(testing::Contains(error, "has no model.pt"));
  }
  // The model_fn path reads the weights alone.
  CHECK(Predictor(testing::ServedRegression, path).predict({{"x", testing::Rows(0, 2)}}).size() == 2);
}

TEST_CASE("Python's torch.jit.load runs an export's program to the same answers", "[serving][program][skippable]") {
  if (testing::RunCommand("/usr/bin/python3 -c 'import torch'").exit_code != 0) {
    EST_SKIP("needs Python with PyTorch (Debian's python3-torch, which make test installs)");
  }
  auto estimator = Trained(testing::ServedRegression, "program_python");
  const std::string path = estimator->export_saved_model(estimator->model_dir() + "/export",
                                                         testing::RegressionServingInput);
  const at::Tensor x = testing::Rows(20, 7);
  const std::string script =
      "import json, sys, torch\n"
      "program = torch.jit.load(sys.argv[1])\n"
      "with torch.no_grad():\n"
      "    out = program(torch.tensor(json.loads(sys.argv[2]), dtype=torch.float32))\n"
      "print(json.dumps({name: {'dtype': str(t.dtype), 'values': t.flatten().tolist()} for name, t in out.items()}))\n";
  nlohmann::json rows = nlohmann::json::array();
  for (int64_t i = 0; i < x.size(0); ++i)
    rows.push_back({x[i][0].item<float>(), x[i][1].item<float>(), x[i][2].item<float>()});
  const testing::RunResult result = testing::RunCommand("/usr/bin/python3 -c \"" + script + "\" " +
                                                        (fs::path(path) / "model.pt").string() + " '" + rows.dump() + "'");
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  const nlohmann::json read = nlohmann::json::parse(result.output);
  const TensorMap expected = EstimatorAnswers(*estimator, x);
  CHECK(read.at("y").at("dtype") == "torch.float32");
  CHECK(read.at("positive").at("dtype") == "torch.bool");
  const std::vector<double> y = read.at("y").at("values").get<std::vector<double>>();
  const std::vector<bool> positive = read.at("positive").at("values").get<std::vector<bool>>();
  REQUIRE(y.size() == 7);
  REQUIRE(positive.size() == 7);
  for (int64_t i = 0; i < 7; ++i) {
    INFO("row " << i);
    CHECK(std::abs(y[i] - expected.at("y")[i].item<double>()) <= 1e-6);
    CHECK(positive[i] == expected.at("positive")[i].item<bool>());
  }
}

}  // namespace traced_program_test
