#pragma once
/// ModelRegistry: the models a ModelServer serves, by name. A new list of models (a model config
/// file read again, a model repository looked at again) is applied without a restart: new models
/// load beside the served ones, a model of a new base path or version policy is loaded anew and
/// then served in place of the old, and a model no longer named is dropped; a model dropped or
/// replaced is freed once its running requests are answered.

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "serving/model_config.h"
#include "serving/served_model.h"

namespace est::serving {

/// The served models by name; thread-safe.
class ModelRegistry {
 public:
  /// Loads `models` (ValidateModelConfigs' ConfigError; CheckpointError naming the model whose
  /// versions do not load), each a ServedModel of `defaults` with its policy and labels, running
  /// `model_fn` (nullptr: the exports' traced programs). A lone model of no name is named as its
  /// export's manifest names it, else "default" (TensorFlow Serving's name for a model unnamed).
  ModelRegistry(ModelFn model_fn, ServedModelOptions defaults, const std::vector<ModelConfig>& models);

  /// Serves `models` from now on. The models to load are loaded first: when one does not, the
  /// error names it and nothing changes. True when anything changed.
  bool apply(const std::vector<ModelConfig>& models);

  /// The model named `name`; null when none is.
  std::shared_ptr<ServedModel> find(const std::string& name) const;
  /// The models served, by name.
  std::map<std::string, std::shared_ptr<ServedModel>> models() const;
  /// The names served, in order.
  std::vector<std::string> names() const;

 private:
  struct Entry {
    ModelConfig config;
    std::shared_ptr<ServedModel> model;
  };
  std::shared_ptr<ServedModel> load(const ModelConfig& config) const;

  const ModelFn model_fn_;
  const ServedModelOptions defaults_;
  std::mutex apply_mutex_;  ///< one apply() at a time
  mutable std::mutex mutex_;
  std::map<std::string, Entry> entries_;
};

}  // namespace est::serving
