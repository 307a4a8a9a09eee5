// Which models and versions a server serves: TensorFlow Serving's model config file (text format)
// read as its documentation writes it, with each mistake named; version policies; a model
// repository's folders; a ModelRegistry that loads the versions a policy names and applies a new
// list without touching the models it keeps.

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "serving/model_config.h"
#include "serving/model_registry.h"
#include "tests/serving/serving_models.h"

namespace model_config_test {
using namespace est;
using namespace est::serving;
namespace fs = std::filesystem;

namespace {

std::string ConfigErrorOf(const std::string& text) {
  return testing::ErrorMessageOf<ConfigError>([&] { ParseModelConfig(text, "/models/models.config"); });
}

}  // namespace

TEST_CASE("version policies select the latest N, all, or the versions named", "[serving][config]") {
  const std::vector<int64_t> available = {7, 3, 12, 5};
  CHECK(VersionPolicy::Latest().select(available) == std::vector<int64_t>{12});
  CHECK(VersionPolicy::Latest(2).select(available) == std::vector<int64_t>{7, 12});
  CHECK(VersionPolicy::Latest(9).select(available) == std::vector<int64_t>{3, 5, 7, 12});
  CHECK(VersionPolicy::All().select(available) == std::vector<int64_t>{3, 5, 7, 12});
  CHECK(VersionPolicy::Specific({5, 12, 40}).select(available) == std::vector<int64_t>{5, 12});
  CHECK(VersionPolicy::Specific({5, 12, 40}).describe() == "specific {5, 12, 40}");
  CHECK(VersionPolicy::Latest(2).describe() == "latest 2");
  CHECK_THROWS_WITH(VersionPolicy::Latest(0), Catch::Contains("at least 1 version"));
  CHECK_THROWS_WITH(VersionPolicy::Specific({}), Catch::Contains("names no version"));
  CHECK_THROWS_WITH(VersionPolicy::Specific({0, 2}), Catch::Contains("version 0"));
}

TEST_CASE("TensorFlow Serving's model config file is read as its documentation writes it", "[serving][config]") {
  // The shape of TF Serving's documented example (serving_config.md), with each version policy.
  const std::string text = R"(
model_config_list {
  config {
    name: 'my_first_model'
    base_path: '/tmp/my_first_model/'
    model_platform: 'tensorflow'
    model_version_policy {
      specific {
        versions: 42
        versions: 43
      }
    }
    version_labels {
      key: 'stable'
      value: 42
    }
    version_labels {
      key: 'canary'
      value: 43
    }
  }
  config {
    name: "my_second_model"
    base_path: "second"
    model_version_policy { latest { num_versions: 2 } }
  }
  config {
    name: "third"
    base_path: "/models/third"
    model_type: TENSORFLOW
    model_version_policy { all {} }
  }
  config {
    name: "fourth"
    base_path: "/models/fourth"
    model_platform: "torch_estimator"
  }
}
)";
  const std::vector<ModelConfig> models = ParseModelConfig(text, "/etc/serving/models.config");
  REQUIRE(models.size() == 4);
  CHECK(models[0].name() == "my_first_model");
  CHECK(models[0].base_path() == "/tmp/my_first_model/");
  CHECK(models[0].version_policy() == VersionPolicy::Specific({42, 43}));
  CHECK(models[0].version_labels() == VersionLabels{{"stable", 42}, {"canary", 43}});
  CHECK(models[1].base_path() == "/etc/serving/second");  // relative: from the file's folder
  CHECK(models[1].version_policy() == VersionPolicy::Latest(2));
  CHECK(models[1].version_labels().empty());
  CHECK(models[2].version_policy() == VersionPolicy::All());
  CHECK(models[3].version_policy() == VersionPolicy::Latest(1));  // TF Serving's default
}

TEST_CASE("a model config file's mistakes are named with their place", "[serving][config]") {
  CHECK_THAT(ConfigErrorOf("model_config_list { config { name: 'a' base_path: '/a' "),
             Catch::Contains("'/models/models.config'") && Catch::Contains("line 1"));
  CHECK_THAT(ConfigErrorOf("model_config_list { config { name: 'a' base_path: '/a' logging_config { } } }"),
             Catch::Contains("logging_config"));
  CHECK_THAT(ConfigErrorOf("model_config_list { config { name: 'a' base_pth: '/a' } }"),
             Catch::Contains("base_pth") && Catch::Contains("column"));
  CHECK_THAT(ConfigErrorOf(""), Catch::Contains("no model_config_list"));
  CHECK_THAT(ConfigErrorOf("model_config_list { }"), Catch::Contains("names none"));
  CHECK_THAT(ConfigErrorOf("model_config_list { config { base_path: '/a' } }"),
             Catch::Contains("'/a'") && Catch::Contains("has no name"));
  CHECK_THAT(ConfigErrorOf("model_config_list { config { name: 'a' } }"),
             Catch::Contains("'a'") && Catch::Contains("no base_path"));
  CHECK_THAT(ConfigErrorOf("model_config_list { config { name: 'a' base_path: '/a' } config { name: 'a' base_path: "
                           "'/b' } }"),
             Catch::Contains("'a' is named twice"));
  CHECK_THAT(ConfigErrorOf("model_config_list { config { name: 'a' base_path: '/a' model_platform: 'onnx' } }"),
             Catch::Contains("model_platform 'onnx'"));
  CHECK_THAT(ConfigErrorOf("model_config_list { config { name: 'a' base_path: '/a' model_version_policy { specific "
                           "{ } } } }"),
             Catch::Contains("names no version"));
  CHECK_THAT(ConfigErrorOf("model_config_list { config { name: 'a' base_path: '/a' version_labels { key: 'x' value: "
                           "0 } } }"),
             Catch::Contains("label 'x'") && Catch::Contains("version 0"));
  CHECK_THAT(testing::ErrorMessageOf<IoError>([] { ReadModelConfigFile("/nonexistent/models.config"); }),
             Catch::Contains("/nonexistent/models.config"));
}

TEST_CASE("a model repository serves each folder as the model of its name", "[serving][config]") {
  const fs::path repository = testing::FreshTempDir("model_repository");
  fs::create_directories(repository / "beta" / "1");
  fs::create_directories(repository / "alpha");
  fs::create_directories(repository / ".hidden");
  std::ofstream(repository / "README") << "not a model";
  const std::vector<ModelConfig> models = ModelRepositoryConfigs(repository.string());
  REQUIRE(models.size() == 2);
  CHECK(models[0].name() == "alpha");
  CHECK(models[0].base_path() == (repository / "alpha").string());
  CHECK(models[1].name() == "beta");
  CHECK(models[1].version_policy() == VersionPolicy::Latest());
  CHECK_THAT(testing::ErrorMessageOf<ConfigError>([&] { ModelRepositoryConfigs((repository / "README").string()); }),
             Catch::Contains("is not a folder"));
}

TEST_CASE("a ModelRegistry serves the versions a policy names and applies a new list in place",
          "[serving][config][registry]") {
  Estimator estimator(testing::ServedRegression, testing::FreshTempDir("registry").string(), testing::QuietConfig());
  const auto identity = ExportOptions().model(testing::RegressionIdentity());
  std::vector<int64_t> versions;
  for (int64_t steps : {10, 20, 30})
    versions.push_back(std::stoll(
        fs::path(testing::TrainAndExport(estimator, steps, testing::RegressionServingInput, identity)).filename().string()));
  const std::string base = estimator.model_dir() + "/export";
  const auto served = ServedModelOptions().reload_interval(std::chrono::milliseconds(0));
  auto versions_of = [](const ServedModel& model) {
    std::vector<int64_t> numbers;
    for (const auto& [version, predictor] : model.versions()) numbers.push_back(version);
    return numbers;
  };

  ModelRegistry registry(
      nullptr, served,
      {ModelConfig().name("all").base_path(base).version_policy(VersionPolicy::All()),
       ModelConfig().name("two").base_path(base).version_policy(VersionPolicy::Latest(2)),
       ModelConfig().name("first").base_path(base).version_policy(VersionPolicy::Specific({versions[0], 999}))
           .version_labels({{"stable", versions[0]}})});
  CHECK(registry.names() == std::vector<std::string>{"all", "first", "two"});
  CHECK(versions_of(*registry.find("all")) == versions);
  CHECK(versions_of(*registry.find("two")) == std::vector<int64_t>{versions[1], versions[2]});
  CHECK(versions_of(*registry.find("first")) == std::vector<int64_t>{versions[0]});
  CHECK(registry.find("first")->labeled("stable") == versions[0]);
  CHECK(registry.find("first")->labeled("canary") == std::nullopt);
  CHECK(registry.find("none") == nullptr);

  // The same list with a label moved: nothing loads again.
  const std::shared_ptr<ServedModel> kept = registry.find("all");
  const std::shared_ptr<ServedModel> relabeled = registry.find("first");
  CHECK(registry.apply({ModelConfig().name("all").base_path(base).version_policy(VersionPolicy::All()),
                        ModelConfig().name("first").base_path(base).version_policy(
                            VersionPolicy::Specific({versions[0], 999})).version_labels({{"stable", 999}})}));
  CHECK(registry.find("all") == kept);
  CHECK(registry.find("first") == relabeled);
  CHECK(registry.find("first")->labeled("stable") == 999);
  CHECK(registry.find("two") == nullptr);

  // A model that does not load: named, and nothing changes.
  const std::string refusal = testing::ErrorMessageOf<CheckpointError>([&] {
    registry.apply({ModelConfig().name("all").base_path(base).version_policy(VersionPolicy::Latest()),
                    ModelConfig().name("missing").base_path(base + "-missing")});
  });
  CHECK_THAT(refusal, Catch::Contains("model 'missing'") && Catch::Contains(base + "-missing"));
  CHECK(registry.names() == std::vector<std::string>{"all", "first"});
  CHECK(registry.find("all") == kept);
  CHECK(versions_of(*kept) == versions);

  // A new policy loads the model anew and serves it in place of the old.
  CHECK(registry.apply({ModelConfig().name("all").base_path(base).version_policy(VersionPolicy::Latest())}));
  CHECK(registry.find("all") != kept);
  CHECK(versions_of(*registry.find("all")) == std::vector<int64_t>{versions[2]});
  CHECK_FALSE(registry.apply({ModelConfig().name("all").base_path(base).version_policy(VersionPolicy::Latest())}));
}

}  // namespace model_config_test
