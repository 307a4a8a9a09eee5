#pragma once
/// ModelContext: the persistent state of a model_fn (modules, optimizers, buffers),
/// created once by name and returned again on every later call.

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <nlohmann/json.hpp>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <any>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/error.h"
#include "estimator/mode.h"
#include "estimator/replica_context.h"

namespace est {

/// The checkpoint key of the global step, reserved for the framework.
inline constexpr const char* kGlobalStepName = "global_step";

/// Named variables: checkpoint key and tensor.
using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

/// Handed to model_fn on every call. The first call of `module(name, make)` (and of
/// `optimizer`, `buffer`) creates the object with `make` and registers it under `name`;
/// later calls, in any mode, return the same object. Names give checkpoint keys:
/// parameter `fc.weight` of module `cnn` is saved as `cnn/fc.weight`. A newly created
/// module is moved to this replica's device (its 4-D parameters and buffers laid out
/// channels-last where the replica uses channels-last: RunConfig::channels_last) and, when a
/// checkpoint is being restored, receives its values before it is returned.
class ModelContext {
 public:
  /// What the framework does when state is created: restore it from a checkpoint,
  /// warm-start it, or broadcast it from the chief.
  struct Initializers {
    /// Called with the new variables of a module or buffer (keys as in the checkpoint).
    std::function<void(const NamedTensors& variables)> variables;
    /// Called with a new optimizer and its name.
    std::function<void(const std::string& name, torch::optim::Optimizer& optimizer)> optimizer;
  };

  /// A context for one replica on `device`; `params` is the Estimator's params;
  /// `channels_last`: new modules get their 4-D parameters and buffers in channels-last.
  ModelContext(std::shared_ptr<const nlohmann::json> params, c10::Device device, Initializers initializers,
               bool channels_last = false);
  ~ModelContext();
  ModelContext(const ModelContext&) = delete;
  ModelContext& operator=(const ModelContext&) = delete;

  /// The module registered as `name`, created by `make()` on first use. `make` returns a
  /// module holder (`Cnn()` of a TORCH_MODULE) or a std::shared_ptr to a module; the
  /// same type is returned on later calls. The module is in train() mode in Mode::kTrain
  /// and eval() mode otherwise.
  template <typename MakeModule>
  std::decay_t<std::invoke_result_t<MakeModule>> module(const std::string& name, MakeModule&& make);

  /// The optimizer registered as `name`, created by `make()` (returning e.g.
  /// torch::optim::SGD by value) on first use; its state is checkpointed.
  template <typename MakeOptimizer>
  std::decay_t<std::invoke_result_t<MakeOptimizer>>& optimizer(const std::string& name, MakeOptimizer&& make);

  /// A persistent, checkpointed, non-trainable tensor (a counter, a running statistic),
  /// created by `make()` on first use; modify it in place. The reference stays valid for
  /// the context's lifetime, whatever buffers are created after it.
  at::Tensor& buffer(const std::string& name, const std::function<at::Tensor()>& make);

  /// The mode of the current model_fn call.
  Mode mode() const { return mode_; }
  /// The global step of the current call: the number of training steps already taken.
  int64_t global_step() const { return global_step_; }
  /// The Estimator's params (a JSON object, empty when none were given).
  const nlohmann::json& params() const { return *params_; }
  /// The device of this replica; inputs arrive on it and modules are moved to it.
  c10::Device device() const { return device_; }
  /// Whether this replica lays out 4-D parameters, buffers and batch tensors channels-last.
  bool channels_last() const { return channels_last_; }
  /// This replica's place among the replicas in sync, and collectives over them.
  ReplicaContext& replica_context() { return replica_context_; }

  /// Framework side: set before each model_fn call.
  void set_mode(Mode mode);
  /// Framework side: set before each model_fn call.
  void set_global_step(int64_t step) { global_step_ = step; }
  /// Framework side: where this replica runs (alone until set).
  void set_replica_context(ReplicaContext context) { replica_context_ = std::move(context); }
  /// Every checkpointed tensor (module parameters and buffers, context buffers) in creation order.
  NamedTensors variables() const;
  /// The trainable parameters of every module, in creation order.
  std::vector<at::Tensor> trainable_variables() const;
  /// trainable_variables() with their checkpoint keys, in the same order.
  NamedTensors named_trainable_variables() const;
  /// The state that training changes without gradients: every module's buffers (BatchNorm's
  /// running statistics, register_buffer) and the context's buffers, in creation order.
  std::vector<at::Tensor> buffers() const;
  /// The optimizers in creation order, with their names.
  std::vector<std::pair<std::string, torch::optim::Optimizer*>> optimizers() const;
  /// True when `optimizer` was created by this context.
  bool owns(const torch::optim::Optimizer* optimizer) const;

 private:
  struct ModuleEntry {
    std::string name;
    std::shared_ptr<torch::nn::Module> module;
    std::any holder;
    bool training = false;
  };
  struct OptimizerEntry {
    std::string name;
    std::unique_ptr<torch::optim::Optimizer> optimizer;
  };

  ModuleEntry* find_module(const std::string& name);
  torch::optim::Optimizer* find_optimizer(const std::string& name);
  ModuleEntry& add_module(const std::string& name, std::shared_ptr<torch::nn::Module> module, std::any holder);
  void add_optimizer(const std::string& name, std::unique_ptr<torch::optim::Optimizer> optimizer);
  /// Throws a ModelError where `optimizer` steps a tensor that no module or buffer here owns.
  void check_owned_parameters(const std::string& name, const torch::optim::Optimizer& optimizer) const;
  void apply_mode(ModuleEntry& entry);
  void check_new_name(const std::string& name) const;

  template <typename Holder>
  static std::shared_ptr<torch::nn::Module> AsModule(const Holder& holder) {
    if constexpr (std::is_convertible_v<Holder, std::shared_ptr<torch::nn::Module>>) {
      return holder;
    } else {
      return holder.ptr();
    }
  }

  std::shared_ptr<const nlohmann::json> params_;
  c10::Device device_;
  Initializers initializers_;
  bool channels_last_;
  Mode mode_ = Mode::kTrain;
  int64_t global_step_ = 0;
  ReplicaContext replica_context_;
  std::vector<ModuleEntry> modules_;
  std::vector<OptimizerEntry> optimizers_;
  std::deque<std::pair<std::string, at::Tensor>> buffers_;  ///< a deque: buffer() references stay valid
};

template <typename MakeModule>
std::decay_t<std::invoke_result_t<MakeModule>> ModelContext::module(const std::string& name, MakeModule&& make) {
  using Holder = std::decay_t<std::invoke_result_t<MakeModule>>;
  if (ModuleEntry* entry = find_module(name)) {
    const Holder* holder = std::any_cast<Holder>(&entry->holder);
    EST_CHECK(holder != nullptr, ModelError, "module '", name,
              "' is requested with another type than the one it was created with");
    apply_mode(*entry);
    return *holder;
  }
  Holder holder = std::forward<MakeModule>(make)();
  add_module(name, AsModule(holder), std::any(holder));
  return holder;
}

template <typename MakeOptimizer>
std::decay_t<std::invoke_result_t<MakeOptimizer>>& ModelContext::optimizer(const std::string& name,
                                                                           MakeOptimizer&& make) {
  using Optimizer = std::decay_t<std::invoke_result_t<MakeOptimizer>>;
  static_assert(std::is_base_of_v<torch::optim::Optimizer, Optimizer>,
                "ModelContext::optimizer: make() must return a torch::optim::Optimizer subclass");
  if (torch::optim::Optimizer* existing = find_optimizer(name)) {
    auto* typed = dynamic_cast<Optimizer*>(existing);
    EST_CHECK(typed != nullptr, ModelError, "optimizer '", name,
              "' is requested with another type than the one it was created with");
    return *typed;
  }
  auto created = std::make_unique<Optimizer>(std::forward<MakeOptimizer>(make)());
  Optimizer& result = *created;
  add_optimizer(name, std::move(created));
  return result;
}

}  // namespace est
