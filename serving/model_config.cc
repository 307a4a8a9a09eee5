#include "serving/model_config.h"

#include <google/protobuf/text_format.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "common/error.h"
#include "common/file_util.h"
#include "common/text_format_errors.h"
#include "serving/model_config_message.h"

namespace est::serving {
namespace {

namespace fs = std::filesystem;

VersionPolicy PolicyOf(const tf::ServableVersionPolicy& policy, const std::string& where) {
  switch (policy.policy_choice_case()) {
    case tf::ServableVersionPolicy::kAll:
      return VersionPolicy::All();
    case tf::ServableVersionPolicy::kSpecific: {
      const std::set<int64_t> versions(policy.specific().versions().begin(), policy.specific().versions().end());
      EST_CHECK(!versions.empty(), ConfigError, where, ": model_version_policy { specific { } } names no version");
      EST_CHECK(*versions.begin() >= 1, ConfigError, where, ": model_version_policy names version ",
                *versions.begin(), "; versions are positive numbers");
      return VersionPolicy::Specific(versions);
    }
    case tf::ServableVersionPolicy::kLatest:
      return VersionPolicy::Latest(std::max<int64_t>(1, policy.latest().num_versions()));
    case tf::ServableVersionPolicy::POLICY_CHOICE_NOT_SET:
      break;
  }
  return VersionPolicy::Latest();  // TensorFlow Serving's default
}

}  // namespace

std::vector<ModelConfig> ModelConfigsOf(const tf::ModelServerConfig& message, const std::string& folder,
                                        const std::string& what) {
  EST_CHECK(message.has_model_config_list(), ConfigError, what,
            " has no model_config_list: est-serve serves the models a model_config_list names");
  std::vector<ModelConfig> models;
  for (const tf::ModelConfig& config : message.model_config_list().config()) {
    const std::string where = what + ", model '" + config.name() + "'";
    EST_CHECK(config.model_platform().empty() || config.model_platform() == "tensorflow" ||
                  config.model_platform() == "torch_estimator",
              ConfigError, where, ": model_platform '", config.model_platform(),
              "' is not served; est-serve serves exports of TorchEstimator (model_platform \"torch_estimator\", "
              "or \"tensorflow\" as TensorFlow Serving's configs write it)");
    VersionLabels labels;
    for (const auto& [label, version] : config.version_labels()) {
      EST_CHECK(version >= 1, ConfigError, where, ": version label '", label, "' names version ", version,
                "; versions are positive numbers");
      labels.emplace(label, version);
    }
    fs::path base(config.base_path());
    if (!config.base_path().empty() && base.is_relative() && !folder.empty()) base = fs::path(folder) / base;
    models.push_back(ModelConfig()
                         .name(config.name())
                         .base_path(config.base_path().empty() ? "" : base.lexically_normal().string())
                         .version_policy(PolicyOf(config.model_version_policy(), where))
                         .version_labels(std::move(labels)));
  }
  ValidateModelConfigs(models);
  return models;
}

std::vector<ModelConfig> ParseModelConfig(const std::string& text, const std::string& path) {
  tf::ModelServerConfig message;
  TextFormatErrors errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  EST_CHECK(parser.ParseFromString(text, &message), ConfigError, "model config file '", path,
            "' is not a text-format ModelServerConfig (model_config_list { config { name: ... base_path: ... } }): ",
            errors.text());
  return ModelConfigsOf(message, fs::path(path).parent_path().string(), "model config file '" + path + "'");
}

std::vector<ModelConfig> ReadModelConfigFile(const std::string& path) { return ParseModelConfig(ReadFile(path), path); }

std::vector<ModelConfig> ModelRepositoryConfigs(const std::string& repository, const VersionPolicy& policy) {
  std::error_code error;
  EST_CHECK(fs::is_directory(repository, error), ConfigError, "model repository '", repository,
            "' is not a folder; it holds one folder a model, each an export base");
  std::vector<ModelConfig> models;
  for (const auto& entry : fs::directory_iterator(repository, error)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.front() == '.' || !entry.is_directory(error)) continue;
    models.push_back(ModelConfig().name(name).base_path(entry.path().string()).version_policy(policy));
  }
  EST_CHECK(!error, ConfigError, "model repository '", repository, "' cannot be listed: ", error.message());
  std::sort(models.begin(), models.end(), [](const ModelConfig& a, const ModelConfig& b) { return a.name() < b.name(); });
  return models;
}

void ValidateModelConfigs(const std::vector<ModelConfig>& models) {
  EST_CHECK(!models.empty(), ConfigError, "no model to serve: the model config names none");
  std::set<std::string> names;
  for (const ModelConfig& model : models) {
    EST_CHECK(!model.name().empty(), ConfigError, "a model of base path '", model.base_path(),
              "' has no name; each model needs the name clients ask for");
    EST_CHECK(!model.base_path().empty(), ConfigError, "model '", model.name(),
              "' has no base_path; each model needs the folder of its exports");
    EST_CHECK(names.insert(model.name()).second, ConfigError, "model '", model.name(),
              "' is named twice; each model needs a name of its own");
  }
}

}  // namespace est::serving
