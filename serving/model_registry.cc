#include "serving/model_registry.h"

#include "common/error.h"
#include "common/logging.h"

namespace est::serving {

ModelRegistry::ModelRegistry(ModelFn model_fn, ServedModelOptions defaults, const std::vector<ModelConfig>& models)
    : model_fn_(std::move(model_fn)), defaults_(std::move(defaults)) {
  if (models.size() == 1 && models.front().name().empty()) {
    ModelConfig config = models.front();
    std::shared_ptr<ServedModel> model = load(config);
    config.name(model->current()->manifest().model.name);
    if (config.name().empty()) config.name("default");  // TF Serving's name for a model unnamed
    entries_.emplace(config.name(), Entry{config, std::move(model)});
    return;
  }
  ValidateModelConfigs(models);
  for (const ModelConfig& config : models) entries_.emplace(config.name(), Entry{config, load(config)});
}

std::shared_ptr<ServedModel> ModelRegistry::load(const ModelConfig& config) const {
  ServedModelOptions options = defaults_;
  options.version_policy(config.version_policy()).version_labels(config.version_labels());
  if (config.name().empty()) return std::make_shared<ServedModel>(model_fn_, config.base_path(), options);
  try {
    return std::make_shared<ServedModel>(model_fn_, config.base_path(), options);
  } catch (const CheckpointError& error) {
    EST_THROW(CheckpointError, "model '", config.name(), "' (base path '", config.base_path(),
              "') cannot be served: ", error.what());
  }
}

bool ModelRegistry::apply(const std::vector<ModelConfig>& models) {
  ValidateModelConfigs(models);
  std::lock_guard<std::mutex> applying(apply_mutex_);
  const std::map<std::string, Entry> before = [&] {
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_;
  }();
  std::map<std::string, Entry> next;
  bool changed = before.size() != models.size();
  for (const ModelConfig& config : models) {
    const auto served = before.find(config.name());
    const bool same_versions = served != before.end() && served->second.config.base_path() == config.base_path() &&
                               served->second.config.version_policy() == config.version_policy();
    if (!same_versions) {
      Log().info("est-serve: loading model '{}' from '{}' (versions: {})", config.name(), config.base_path(),
                 config.version_policy().describe());
      next.emplace(config.name(), Entry{config, load(config)});  // throws before anything changed
      changed = true;
    } else {
      next.emplace(config.name(), Entry{config, served->second.model});
      changed = changed || served->second.config != config;
    }
  }
  for (const auto& [name, entry] : next)
    if (entry.model->version_labels() != entry.config.version_labels())
      entry.model->set_version_labels(entry.config.version_labels());
  for (const auto& [name, entry] : before)
    if (next.count(name) == 0)
      Log().info("est-serve: model '{}' is no longer served; it is unloaded once its running requests are answered",
                 name);
  std::lock_guard<std::mutex> lock(mutex_);
  entries_ = std::move(next);
  return changed;
}

std::shared_ptr<ServedModel> ModelRegistry::find(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : it->second.model;
}

std::map<std::string, std::shared_ptr<ServedModel>> ModelRegistry::models() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::map<std::string, std::shared_ptr<ServedModel>> models;
  for (const auto& [name, entry] : entries_) models.emplace(name, entry.model);
  return models;
}

std::vector<std::string> ModelRegistry::names() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> names;
  for (const auto& [name, entry] : entries_) names.push_back(name);
  return names;
}

}  // namespace est::serving
