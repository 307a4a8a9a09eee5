#pragma once
/// ModelConfig: one model a ModelServer serves (its name, export base, version policy and
/// version labels), and where a list of them comes from: TensorFlow Serving's model config file
/// (`model_config_list` in protobuf's text format) or a Triton-style model repository (a folder
/// of export bases, one a model).

#include <torch/arg.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "serving/version_policy.h"

namespace est::serving {

/// Names of versions ("stable" → 3) that requests may ask for instead of a number.
using VersionLabels = std::map<std::string, int64_t>;

/// One model of a server.
struct ModelConfig {
  bool operator==(const ModelConfig& other) const {
    return name() == other.name() && base_path() == other.base_path() &&
           version_policy() == other.version_policy() && version_labels() == other.version_labels();
  }
  bool operator!=(const ModelConfig& other) const { return !(*this == other); }

  /// The name clients ask for.
  TORCH_ARG(std::string, name);
  /// The export base directory (versions in numbered folders), or one export.
  TORCH_ARG(std::string, base_path);
  /// Which versions are served.
  TORCH_ARG(VersionPolicy, version_policy);
  /// Labels requests may name instead of a version number.
  TORCH_ARG(VersionLabels, version_labels);
};

/// The models of TensorFlow Serving's model server config in its text format
/// (`model_config_list { config { name: "a" base_path: "/models/a" model_version_policy { ... }
/// version_labels { key: "stable" value: 1 } } }`); a relative base_path is taken from the
/// file's folder. ConfigError naming the file, line and what is wrong: a syntax error, an unknown
/// field, a model without a name or base path, two of one name, a platform other than
/// "tensorflow" or "torch_estimator", a label of a version that is not positive.
std::vector<ModelConfig> ParseModelConfig(const std::string& text, const std::string& path);
/// ParseModelConfig of the file at `path` (IoError when it cannot be read).
std::vector<ModelConfig> ReadModelConfigFile(const std::string& path);

/// The models of a model repository (Triton's layout): each folder of `repository` whose name
/// does not start with '.' is a model of that name, served from it by `policy`. ConfigError when
/// `repository` is not a folder.
std::vector<ModelConfig> ModelRepositoryConfigs(const std::string& repository,
                                                const VersionPolicy& policy = VersionPolicy::Latest());

/// ConfigError for an empty list, a model without a name or base path, or two of one name.
void ValidateModelConfigs(const std::vector<ModelConfig>& models);

}  // namespace est::serving
