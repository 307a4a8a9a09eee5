#include "estimator/model_context.h"

#include <torch/types.h>

#include <nlohmann/json.hpp>

#include <unordered_set>

#include "distribute/strategy.h"
#include "estimator/channels_last.h"

namespace est {
namespace {

// The checkpointed tensors of one module: parameters then buffers, keys "<name>/<path>".
void AppendModuleVariables(const std::string& name, const torch::nn::Module& module, NamedTensors& out) {
  for (const auto& item : module.named_parameters()) out.emplace_back(name + "/" + item.key(), item.value());
  for (const auto& item : module.named_buffers()) out.emplace_back(name + "/" + item.key(), item.value());
}

}  // namespace

ModelContext::ModelContext(std::shared_ptr<const nlohmann::json> params, c10::Device device,
                           Initializers initializers, bool channels_last)
    : params_(params ? std::move(params) : std::make_shared<const nlohmann::json>(nlohmann::json::object())),
      device_(device),
      initializers_(std::move(initializers)),
      channels_last_(channels_last) {
  distribute::CheckDeviceAvailable(device_);
}

ModelContext::~ModelContext() = default;

void ModelContext::set_mode(Mode mode) { mode_ = mode; }

void ModelContext::check_new_name(const std::string& name) const {
  EST_CHECK(!name.empty() && name.find('/') == std::string::npos && name != kGlobalStepName, ModelError,
            "state name '", name, "' is invalid: it must be non-empty, contain no '/' and not be '",
            kGlobalStepName, "'");
  auto taken = [&](const auto& entries) {
    for (const auto& e : entries)
      if (e.name == name) return true;
    return false;
  };
  bool buffer_taken = false;
  for (const auto& [buffer_name, tensor] : buffers_) buffer_taken |= buffer_name == name;
  EST_CHECK(!taken(modules_) && !taken(optimizers_) && !buffer_taken, ModelError, "the name '", name,
            "' is already used by another module, optimizer or buffer");
}

ModelContext::ModuleEntry* ModelContext::find_module(const std::string& name) {
  for (auto& entry : modules_)
    if (entry.name == name) return &entry;
  return nullptr;
}

torch::optim::Optimizer* ModelContext::find_optimizer(const std::string& name) {
  for (auto& entry : optimizers_)
    if (entry.name == name) return entry.optimizer.get();
  return nullptr;
}

ModelContext::ModuleEntry& ModelContext::add_module(const std::string& name,
                                                    std::shared_ptr<torch::nn::Module> module,
                                                    std::any holder) {
  check_new_name(name);
  EST_CHECK(module != nullptr, ModelError, "module '", name, "': make() returned an empty module");
  module->to(device_);
  if (channels_last_) {
    // The same tensors (autograd and the optimizer see no change), their values laid out anew.
    torch::NoGradGuard no_grad;
    for (const auto& tensors : {module->parameters(), module->buffers()})
      for (auto tensor : tensors)
        if (TakesChannelsLast(tensor)) tensor.set_data(tensor.contiguous(at::MemoryFormat::ChannelsLast));
  }
  modules_.push_back(ModuleEntry{name, std::move(module), std::move(holder), false});
  ModuleEntry& entry = modules_.back();
  entry.training = !(mode_ == Mode::kTrain);  // forces apply_mode to set it
  apply_mode(entry);
  if (initializers_.variables) {
    NamedTensors created;
    AppendModuleVariables(name, *entry.module, created);
    initializers_.variables(created);
  }
  return entry;
}

void ModelContext::check_owned_parameters(const std::string& name, const torch::optim::Optimizer& optimizer) const {
  std::unordered_set<const c10::TensorImpl*> owned;
  for (const auto& [key, tensor] : variables()) owned.insert(tensor.unsafeGetTensorImpl());
  const auto& groups = optimizer.param_groups();
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto& params = groups[g].params();
    for (size_t i = 0; i < params.size(); ++i) {
      EST_CHECK(owned.count(params[i].unsafeGetTensorImpl()) > 0, ModelError, "optimizer '", name,
                "' was given a tensor of shape ", params[i].sizes(), " (parameter ", i, " of param group ", g,
                ") that no module or buffer of the ModelContext owns: it would be left out of every checkpoint "
                "and shared by every replica. Create the module inside model_fn with ctx.module(\"name\", "
                "[] { return ...; }) and hand that module's parameters() to the optimizer");
    }
  }
}

void ModelContext::add_optimizer(const std::string& name, std::unique_ptr<torch::optim::Optimizer> optimizer) {
  check_new_name(name);
  check_owned_parameters(name, *optimizer);
  optimizers_.push_back(OptimizerEntry{name, std::move(optimizer)});
  if (initializers_.optimizer) initializers_.optimizer(name, *optimizers_.back().optimizer);
}

void ModelContext::apply_mode(ModuleEntry& entry) {
  const bool training = mode_ == Mode::kTrain;
  if (entry.training != training) {
    entry.module->train(training);
    entry.training = training;
  }
}

at::Tensor& ModelContext::buffer(const std::string& name, const std::function<at::Tensor()>& make) {
  for (auto& [buffer_name, tensor] : buffers_)
    if (buffer_name == name) return tensor;
  check_new_name(name);
  at::Tensor created = make();
  EST_CHECK(created.defined(), ModelError, "buffer '", name, "': make() returned an undefined tensor");
  buffers_.emplace_back(name, created.to(device_).detach());
  if (initializers_.variables) initializers_.variables({buffers_.back()});
  return buffers_.back().second;
}

NamedTensors ModelContext::variables() const {
  NamedTensors result;
  for (const auto& entry : modules_) AppendModuleVariables(entry.name, *entry.module, result);
  for (const auto& buffer : buffers_) result.push_back(buffer);
  return result;
}

std::vector<at::Tensor> ModelContext::trainable_variables() const {
  std::vector<at::Tensor> result;
  for (const auto& entry : modules_)
    for (const auto& parameter : entry.module->parameters())
      if (parameter.requires_grad()) result.push_back(parameter);
  return result;
}

NamedTensors ModelContext::named_trainable_variables() const {
  NamedTensors result;
  for (const auto& entry : modules_)
    for (const auto& item : entry.module->named_parameters())
      if (item.value().requires_grad()) result.emplace_back(entry.name + "/" + item.key(), item.value());
  return result;
}

std::vector<at::Tensor> ModelContext::buffers() const {
  std::vector<at::Tensor> result;
  for (const auto& entry : modules_)
    for (const auto& buffer : entry.module->buffers()) result.push_back(buffer);
  for (const auto& buffer : buffers_) result.push_back(buffer.second);
  return result;
}

std::vector<std::pair<std::string, torch::optim::Optimizer*>> ModelContext::optimizers() const {
  std::vector<std::pair<std::string, torch::optim::Optimizer*>> result;
  for (const auto& entry : optimizers_) result.emplace_back(entry.name, entry.optimizer.get());
  return result;
}

bool ModelContext::owns(const torch::optim::Optimizer* optimizer) const {
  for (const auto& entry : optimizers_)
    if (entry.optimizer.get() == optimizer) return true;
  return false;
}

}  // namespace est
