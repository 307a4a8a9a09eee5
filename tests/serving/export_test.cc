// Estimator::export_saved_model and the export directory: what a version holds, versions and
// their retention, atomic writes (a kill before the rename leaves no version), corruption
// found, and the weights read by Python's torch.load.

#include <sys/wait.h>
#include <unistd.h>

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <array>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/file_util.h"
#include "estimator/export/export_directory.h"
#include "tests/serving/serving_models.h"
#include "tests/skip.h"

namespace export_test {
using namespace est;
namespace fs = std::filesystem;

namespace {

// Runs `command` and returns its standard output; sets `status` to its exit status.
std::string Run(const std::string& command, int& status) {
  std::string output;
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer;
  size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), n);
  const int wait_status = ::pclose(pipe);
  status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
  return output;
}

}  // namespace

TEST_CASE("an export holds the inference weights, the signature and the model's identity", "[serving][export]") {
  Estimator estimator(testing::ServedRegression, testing::FreshTempDir("export_layout").string(),
                      testing::QuietConfig(), nlohmann::json{{"width", 16}});
  estimator.train(testing::RegressionInput, TrainOptions().max_steps(20));
  const std::string base = (fs::path(estimator.model_dir()) / "export" / "served").string();
  const std::string path = estimator.export_saved_model(
      base, testing::RegressionServingInput,
      ExportOptions().model(testing::RegressionIdentity()).metrics(EvalResult({{"loss", 0.25}})));

  CHECK(fs::path(path).parent_path() == fs::path(base));
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(path)) files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  CHECK((files == std::vector<std::string>{"export.json", "model.pt", "variables.pt"}));

  const LoadedExport loaded = ReadExport(path);
  const ExportManifest& manifest = loaded.manifest;
  CHECK(loaded.version == std::stoll(fs::path(path).filename().string()));
  CHECK(manifest.model == testing::RegressionIdentity());
  CHECK((manifest.params == nlohmann::json{{"width", 16}}));
  CHECK(manifest.global_step == 20);
  CHECK((manifest.metrics == std::map<std::string, double>{{"loss", 0.25}}));
  CHECK_FALSE(manifest.moving_averages);
  REQUIRE(manifest.inputs.size() == 1);
  CHECK((manifest.inputs[0] == TensorSpec{"x", at::kFloat, {-1, 3}}));
  // The outputs come from model_fn's predictions; the batch dimension is free.
  REQUIRE(manifest.outputs.size() == 2);
  CHECK((manifest.outputs[0] == TensorSpec{"positive", at::kBool, {-1}}));
  CHECK((manifest.outputs[1] == TensorSpec{"y", at::kFloat, {-1}}));
  // The variables, exactly the checkpoint's; no optimizer state, no global step.
  std::vector<std::string> names;
  for (const auto& [name, weight] : loaded.weights) {
    names.push_back(name);
    CHECK(torch::equal(weight, estimator.get_variable_value(name)));
  }
  CHECK((names == std::vector<std::string>{"net/0.bias", "net/0.weight", "net/2.bias", "net/2.weight"}));

  // The manifest as a user reads it.
  const nlohmann::json json = nlohmann::json::parse(ReadFile((fs::path(path) / "export.json").string()));
  CHECK((json.at("signature").at("inputs").at(0) == nlohmann::json{{"name", "x"}, {"dtype", "float32"}, {"shape", {-1, 3}}}));
  CHECK((json.at("model") == nlohmann::json{{"name", "served_regression"}, {"version", "1"}}));
  const nlohmann::json& program = json.at("program");
  CHECK(program.at("file") == "model.pt");
  CHECK(program.at("format") == "torchscript");
  CHECK(program.at("libtorch_version") == TORCH_VERSION);
  CHECK(program.at("bytes") == fs::file_size(fs::path(path) / "model.pt"));
}

TEST_CASE("Python's torch.load reads an export's weights", "[serving][export][skippable]") {
  int status = 0;
  Run("/usr/bin/python3 -c 'import torch' 2>&1", status);
  if (status != 0) {
    EST_SKIP("needs Python with PyTorch (Debian's python3-torch, which make test installs)");
  }
  Estimator estimator(testing::ServedRegression, testing::FreshTempDir("export_python").string(),
                      testing::QuietConfig());
  const std::string path = testing::TrainAndExport(estimator, 5);
  const std::string script =
      "import json, sys, torch\n"
      "weights = torch.load(sys.argv[1])\n"
      "print(json.dumps({name: {'dtype': str(t.dtype), 'shape': list(t.shape), 'values': t.flatten().tolist()}\n"
      "                  for name, t in weights.items()}))\n";
  const std::string output =
      Run("/usr/bin/python3 -c \"" + script + "\" " + (fs::path(path) / "variables.pt").string() + " 2>&1", status);
  INFO(output);
  REQUIRE(status == 0);
  const nlohmann::json read = nlohmann::json::parse(output);
  REQUIRE(read.size() == 4);
  for (const std::string name : {"net/0.weight", "net/0.bias", "net/2.weight", "net/2.bias"}) {
    INFO(name);
    const at::Tensor value = estimator.get_variable_value(name);
    CHECK(read.at(name).at("dtype") == "torch.float32");
    CHECK(read.at(name).at("shape").get<std::vector<int64_t>>() == value.sizes().vec());
    const std::vector<double> values = read.at(name).at("values").get<std::vector<double>>();
    const at::Tensor flat = value.flatten();
    REQUIRE(static_cast<int64_t>(values.size()) == flat.numel());
    for (int64_t i = 0; i < flat.numel(); ++i) CHECK(static_cast<float>(values[i]) == flat[i].item<float>());
  }
}

TEST_CASE("exports get increasing versions, and retention removes only old versions", "[serving][export]") {
  const fs::path base = testing::FreshTempDir("export_versions");
  const std::map<std::string, at::Tensor> weights = {{"w", torch::arange(4, torch::kFloat)}};
  ExportManifest manifest;
  manifest.inputs = {{"x", at::kFloat, {-1}}};
  std::vector<std::string> paths;
  for (int step = 1; step <= 3; ++step) {
    manifest.global_step = step;
    paths.push_back(WriteExport(base.string(), manifest, weights));
  }
  const std::vector<int64_t> versions = ExportVersions(base.string());
  REQUIRE(versions.size() == 3);
  CHECK(versions[0] < versions[1]);
  CHECK(versions[1] < versions[2]);
  CHECK(ReadExport(paths[2]).manifest.global_step == 3);

  // A user's file beside the versions, and one inside an old version, are not deleted.
  std::ofstream(base / "NOTES") << "mine";
  std::ofstream(fs::path(paths[0]) / "notes.txt") << "mine too";
  CHECK(RemoveOldExports(base.string(), 1) == 2);
  CHECK((ExportVersions(base.string()) == std::vector<int64_t>{versions[2]}));
  CHECK(fs::exists(base / "NOTES"));
  CHECK(fs::exists(fs::path(paths[0]) / "notes.txt"));
  CHECK_FALSE(fs::exists(fs::path(paths[0]) / "export.json"));
  CHECK_FALSE(fs::exists(paths[1]));
  CHECK_THROWS_WITH(RemoveOldExports(base.string(), 0), Catch::Contains("exports_to_keep must be at least 1"));
}

namespace {

// What the child of the next test exports.
ExportManifest KilledManifest() {
  ExportManifest manifest;
  manifest.global_step = 7;
  manifest.inputs = {{"x", at::kFloat, {-1}}};
  return manifest;
}

}  // namespace

// Not a test: the entry point of the next test's child process, which needs a process of its
// own (crash points read their environment once). Hidden, but a run selecting this file's
// tests by tag includes it: without the child's environment it does nothing.
TEST_CASE("export child: exports into EST_TEST_EXPORT_BASE", "[.][export_child]") {
  if (const char* base = std::getenv("EST_TEST_EXPORT_BASE"))
    WriteExport(base, KilledManifest(), {{"w", torch::arange(4, torch::kFloat)}});
}

TEST_CASE("a process killed before an export's rename leaves no version, and its files go later",
          "[serving][export]") {
  const fs::path base = testing::FreshTempDir("export_killed");
  const fs::path crash_points = testing::FreshTempDir("export_killed_points");
  std::ofstream(crash_points / "local@export_rename@7").put('x');
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setenv("EST_CRASH_POINTS_DIR", crash_points.c_str(), 1);
    ::setenv("EST_TEST_EXPORT_BASE", base.c_str(), 1);
    ::unsetenv("EST_TASK");
    ::execl("/proc/self/exe", "serving_tests", "[export_child]", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  // Its files are complete, in a temporary directory no reader takes for a version.
  CHECK(ExportVersions(base.string()).empty());
  int entries = 0;
  for (const auto& entry : fs::directory_iterator(base)) {
    ++entries;
    CHECK(entry.path().filename().string().rfind(".tmp-export-", 0) == 0);
    CHECK(fs::exists(entry.path() / "export.json"));
  }
  CHECK(entries == 1);
  // The next export removes them.
  const std::string path = WriteExport(base.string(), KilledManifest(), {{"w", torch::arange(4, torch::kFloat)}});
  entries = 0;
  for (const auto& entry : fs::directory_iterator(base)) {
    ++entries;
    CHECK(entry.path() == fs::path(path));
  }
  CHECK(entries == 1);
}

TEST_CASE("an export's assets are written beside its weights, recorded and checked", "[serving][export]") {
  Estimator estimator(testing::ServedRegression, testing::FreshTempDir("export_assets").string(),
                      testing::QuietConfig(), nlohmann::json{{"width", 4}});
  estimator.train(testing::RegressionInput, TrainOptions().max_steps(2));
  const std::string base = (fs::path(estimator.model_dir()) / "export" / "served").string();
  const ExportAssets assets{{"vocabulary.txt", "apple\nbanana\n"}, {"spec.json", "{}\n"}};
  const std::string path = estimator.export_saved_model(
      base, testing::RegressionServingInput, ExportOptions().weights_only(true).assets(assets));
  const ExportManifest manifest = ReadExport(path).manifest;
  REQUIRE(manifest.assets.size() == 2);
  CHECK(manifest.assets[0].file == "assets/spec.json");
  CHECK(manifest.assets[1].file == "assets/vocabulary.txt");
  CHECK(manifest.assets[1].bytes == 13);
  CHECK(ReadFile((fs::path(path) / "assets" / "vocabulary.txt").string()) == "apple\nbanana\n");
  CHECK(ReadExportFile(path, manifest.assets[1]) == "apple\nbanana\n");
  // What export.json says of them, as a user reads it.
  const nlohmann::json json = nlohmann::json::parse(ReadFile((fs::path(path) / "export.json").string()));
  CHECK(json.at("assets").at(0).at("file") == "assets/spec.json");
  CHECK(json.at("assets").at(0).at("bytes") == 3);

  SECTION("a changed asset is refused, naming it") {
    const std::string file = (fs::path(path) / "assets" / "vocabulary.txt").string();
    WriteFileAtomic(file, "apple\nbananA\n");
    CHECK_THROWS_MATCHES(ReadExportFile(path, manifest.assets[1]), CheckpointError,
                         testing::MessageMatches(Catch::Contains(file) && Catch::Contains("is corrupt")));
    fs::remove(file);
    CHECK_THROWS_MATCHES(ReadExportFile(path, manifest.assets[1]), CheckpointError,
                         testing::MessageMatches(Catch::Contains("has no assets/vocabulary.txt")));
  }
  SECTION("a manifest naming a file outside assets/ is refused") {
    nlohmann::json edited = json;
    edited["assets"][0]["file"] = "assets/../variables.pt";
    CHECK_THROWS_MATCHES(ExportManifest::Parse(edited.dump(), "export.json"), CheckpointError,
                         testing::MessageMatches(Catch::Contains("assets/../variables.pt") &&
                                                 Catch::Contains("not a plain file name")));
  }
  SECTION("names that are not plain file names are refused") {
    for (const std::string name : {"", ".hidden", "a/b", "../up", "space name"}) {
      INFO(name);
      CHECK_THROWS_MATCHES(estimator.export_saved_model(base, testing::RegressionServingInput,
                                                        ExportOptions().assets({{name, "x"}})),
                           ConfigError, testing::MessageMatches(Catch::Contains("ExportOptions::assets")));
    }
  }
  SECTION("retention removes an old version's assets with it") {
    estimator.export_saved_model(base, testing::RegressionServingInput, ExportOptions().weights_only(true));
    CHECK(RemoveOldExports(base, 1) == 1);
    CHECK_FALSE(fs::exists(path));
  }
}

TEST_CASE("a corrupt, truncated or foreign export is refused, naming the file", "[serving][export]") {
  const fs::path base = testing::FreshTempDir("export_corrupt");
  ExportManifest manifest;
  manifest.inputs = {{"x", at::kFloat, {-1}}};
  const std::string path = WriteExport(base.string(), manifest, {{"w", torch::arange(64, torch::kFloat)}});
  const std::string weights = (fs::path(path) / "variables.pt").string();
  const std::string bytes = ReadFile(weights);

  SECTION("a flipped byte") {
    std::string flipped = bytes;
    flipped[bytes.size() / 2] ^= 0x40;
    WriteFileAtomic(weights, flipped);
    CHECK_THROWS_MATCHES(ReadExport(path), CheckpointError,
                         testing::MessageMatches(Catch::Contains(weights) && Catch::Contains("is corrupt")));
  }
  SECTION("a truncated weights file") {
    WriteFileAtomic(weights, bytes.substr(0, bytes.size() - 10));
    CHECK_THROWS_MATCHES(ReadExport(path), CheckpointError,
                         testing::MessageMatches(Catch::Contains(weights) && Catch::Contains("truncated")));
  }
  SECTION("a manifest that is not one") {
    const std::string manifest_path = (fs::path(path) / "export.json").string();
    WriteFileAtomic(manifest_path, "{\"format\": \"something else\"}");
    CHECK_THROWS_MATCHES(ReadExport(path), CheckpointError,
                         testing::MessageMatches(Catch::Contains(manifest_path) && Catch::Contains("not a TorchEstimator export")));
    WriteFileAtomic(manifest_path, "{ not json");
    CHECK_THROWS_MATCHES(ReadExport(path), CheckpointError,
                         testing::MessageMatches(Catch::Contains(manifest_path) && Catch::Contains("cannot be read")));
  }
  SECTION("no export at all") {
    CHECK_THROWS_MATCHES(ReadExport(base.string()), CheckpointError,
                         testing::MessageMatches(Catch::Contains("no export in") && Catch::Contains(base.string())));
  }
}

TEST_CASE("export_saved_model refuses bad serving inputs and a model_dir without checkpoints", "[serving][export]") {
  Estimator untrained(testing::ServedRegression, testing::FreshTempDir("export_untrained").string(),
                      testing::QuietConfig());
  const std::string base = (fs::path(untrained.model_dir()) / "export").string();
  CHECK_THROWS_MATCHES(untrained.export_saved_model(base, testing::RegressionServingInput), CheckpointError,
                       testing::MessageMatches(Catch::Contains("train first")));
  untrained.train(testing::RegressionInput, TrainOptions().max_steps(1));
  auto refused = [&](ServingInputReceiver receiver) {
    return testing::ErrorMessageOf<ConfigError>([&] { untrained.export_saved_model(base, [&] { return receiver; }); });
  };
  CHECK_THAT(refused({}), Catch::Contains("declares no inputs"));
  CHECK_THAT(refused({{{"x", at::kFloat, {-1, 3}}, {"x", at::kFloat, {-1, 3}}}, nullptr}),
             Catch::Contains("'x' is declared twice"));
  CHECK_THAT(refused({{{"x", at::kFloat, {}}}, nullptr}), Catch::Contains("rank 0"));
  CHECK_THAT(refused({{{"x", at::kFloat, {-2, 3}}}, nullptr}), Catch::Contains("size -2"));
  // Class names for a model of no class scores.
  CHECK_THAT(testing::ErrorMessageOf<ConfigError>([&] {
               untrained.export_saved_model(base, testing::RegressionServingInput,
                                            ExportOptions().class_labels({"no", "yes"}));
             }),
             Catch::Contains("2 class_labels; expected as many as the classes of the output 'scores' or "
                             "'probabilities' (model_fn predicts neither)"));
  CHECK(ExportVersions(base).empty());
}

}  // namespace export_test
