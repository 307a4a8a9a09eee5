#include "distribute/parameter_server/shard_optimizer.h"

#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>
#include <torch/types.h>

#include <c10/util/Type.h>

#include <type_traits>
#include <typeinfo>

#include "common/error.h"
#include "common/optimizer_state_key.h"
#include "distribute/optimizer/ftrl.h"

namespace est::distribute {
namespace {

namespace optim = torch::optim;

const optim::OptimizerOptions& GroupOptions(const optim::Optimizer& optimizer, const at::Tensor& variable,
                                            const std::string& name) {
  for (const auto& group : optimizer.param_groups())
    for (const auto& parameter : group.params())
      if (parameter.unsafeGetTensorImpl() == variable.unsafeGetTensorImpl()) return group.options();
  EST_THROW(ConfigError, "variable '", name, "' is in no parameter group of its optimizer");
}

at::Tensor StepTensor(int64_t step) { return torch::tensor(step, torch::kInt64); }

int64_t StepValue(const OptimizerSlots& slots) {
  for (const auto& [slot, tensor] : slots)
    if (slot == "step") return tensor.item<int64_t>();
  return 0;
}

at::Tensor SlotOrUndefined(const OptimizerSlots& slots, const char* name) {
  for (const auto& [slot, tensor] : slots)
    if (slot == name) return tensor;
  return {};
}

void AddIfDefined(OptimizerSlots& slots, const char* name, const at::Tensor& tensor) {
  if (tensor.defined()) slots.emplace_back(name, tensor);
}

/// The state of `variable` in `optimizer`, of type State; nullptr when it has none.
template <typename State>
const State* FindState(const optim::Optimizer& optimizer, const at::Tensor& variable) {
  const auto& state = optimizer.state();
  auto it = state.find(OptimizerStateKey<std::decay_t<decltype(state)>>(variable));
  if (it == state.end()) return nullptr;
  return dynamic_cast<const State*>(it->second.get());
}

template <typename State>
void PutState(optim::Optimizer& optimizer, const at::Tensor& variable, std::unique_ptr<State> state) {
  auto& states = optimizer.state();
  states[OptimizerStateKey<std::decay_t<decltype(states)>>(variable)] = std::move(state);
}

void CheckKind(const ps::OptimizerConfig& config, const char* kind) {
  EST_CHECK(config.kind() == kind, ConfigError, "a ps shard's optimizer is ", kind, " but the worker sent options of ",
            config.kind());
}

/// Sets `options` from `config` for each kind.
void Apply(optim::SGDOptions& options, const ps::OptimizerConfig& config) {
  options.lr(config.lr()).momentum(config.momentum()).dampening(config.dampening())
      .weight_decay(config.weight_decay()).nesterov(config.nesterov());
}
template <typename AdamLike>
void ApplyAdam(AdamLike& options, const ps::OptimizerConfig& config) {
  options.lr(config.lr()).betas(std::make_tuple(config.beta1(), config.beta2())).eps(config.eps())
      .weight_decay(config.weight_decay()).amsgrad(config.amsgrad());
}
void Apply(optim::AdagradOptions& options, const ps::OptimizerConfig& config) {
  options.lr(config.lr()).lr_decay(config.lr_decay()).weight_decay(config.weight_decay())
      .initial_accumulator_value(config.initial_accumulator_value()).eps(config.eps());
}
void Apply(optim::RMSpropOptions& options, const ps::OptimizerConfig& config) {
  options.lr(config.lr()).alpha(config.alpha()).eps(config.eps()).weight_decay(config.weight_decay())
      .momentum(config.momentum()).centered(config.centered());
}
void Apply(est::optim::FtrlOptions& options, const ps::OptimizerConfig& config) {
  options.lr(config.lr()).learning_rate_power(config.learning_rate_power())
      .initial_accumulator_value(config.initial_accumulator_value()).l1(config.l1()).l2(config.l2())
      .l2_shrinkage(config.l2_shrinkage()).beta(config.beta()).sparse_rows(config.sparse_rows());
}

constexpr const char* kSupportedKinds = "SGD, Adam, AdamW, Adagrad, RMSprop and Ftrl";

}  // namespace

bool OptimizerHolds(const optim::Optimizer& optimizer, const at::Tensor& variable) {
  for (const auto& group : optimizer.param_groups())
    for (const auto& parameter : group.params())
      if (parameter.unsafeGetTensorImpl() == variable.unsafeGetTensorImpl()) return true;
  return false;
}

ps::OptimizerConfig DescribeOptimizer(const optim::Optimizer& optimizer, const at::Tensor& variable,
                                      const std::string& name) {
  const optim::OptimizerOptions& options = GroupOptions(optimizer, variable, name);
  ps::OptimizerConfig config;
  if (auto* sgd = dynamic_cast<const optim::SGDOptions*>(&options)) {
    config.set_kind("SGD");
    config.set_lr(sgd->lr());
    config.set_momentum(sgd->momentum());
    config.set_dampening(sgd->dampening());
    config.set_weight_decay(sgd->weight_decay());
    config.set_nesterov(sgd->nesterov());
  } else if (auto* adamw = dynamic_cast<const optim::AdamWOptions*>(&options)) {
    config.set_kind("AdamW");
    config.set_lr(adamw->lr());
    config.set_beta1(std::get<0>(adamw->betas()));
    config.set_beta2(std::get<1>(adamw->betas()));
    config.set_eps(adamw->eps());
    config.set_weight_decay(adamw->weight_decay());
    config.set_amsgrad(adamw->amsgrad());
  } else if (auto* adam = dynamic_cast<const optim::AdamOptions*>(&options)) {
    config.set_kind("Adam");
    config.set_lr(adam->lr());
    config.set_beta1(std::get<0>(adam->betas()));
    config.set_beta2(std::get<1>(adam->betas()));
    config.set_eps(adam->eps());
    config.set_weight_decay(adam->weight_decay());
    config.set_amsgrad(adam->amsgrad());
  } else if (auto* adagrad = dynamic_cast<const optim::AdagradOptions*>(&options)) {
    config.set_kind("Adagrad");
    config.set_lr(adagrad->lr());
    config.set_lr_decay(adagrad->lr_decay());
    config.set_weight_decay(adagrad->weight_decay());
    config.set_initial_accumulator_value(adagrad->initial_accumulator_value());
    config.set_eps(adagrad->eps());
  } else if (auto* rmsprop = dynamic_cast<const optim::RMSpropOptions*>(&options)) {
    config.set_kind("RMSprop");
    config.set_lr(rmsprop->lr());
    config.set_alpha(rmsprop->alpha());
    config.set_eps(rmsprop->eps());
    config.set_weight_decay(rmsprop->weight_decay());
    config.set_momentum(rmsprop->momentum());
    config.set_centered(rmsprop->centered());
  } else if (auto* ftrl = dynamic_cast<const est::optim::FtrlOptions*>(&options)) {
    config.set_kind("Ftrl");
    config.set_lr(ftrl->lr());
    config.set_learning_rate_power(ftrl->learning_rate_power());
    config.set_initial_accumulator_value(ftrl->initial_accumulator_value());
    config.set_l1(ftrl->l1());
    config.set_l2(ftrl->l2());
    config.set_l2_shrinkage(ftrl->l2_shrinkage());
    config.set_beta(ftrl->beta());
    config.set_sparse_rows(ftrl->sparse_rows());
  } else {
    EST_THROW(ConfigError, "variable '", name, "' is updated by an optimizer of type ", c10::demangle(typeid(optimizer).name()),
              ", which parameter servers cannot apply; they apply ", kSupportedKinds);
  }
  return config;
}

std::unique_ptr<optim::Optimizer> MakeShardOptimizer(const ps::OptimizerConfig& config, const at::Tensor& value) {
  const std::vector<at::Tensor> params{value};
  if (config.kind() == "SGD") {
    optim::SGDOptions options(config.lr());
    Apply(options, config);
    return std::make_unique<optim::SGD>(params, options);
  }
  if (config.kind() == "Adam") {
    optim::AdamOptions options;
    ApplyAdam(options, config);
    return std::make_unique<optim::Adam>(params, options);
  }
  if (config.kind() == "AdamW") {
    optim::AdamWOptions options;
    ApplyAdam(options, config);
    return std::make_unique<optim::AdamW>(params, options);
  }
  if (config.kind() == "Adagrad") {
    optim::AdagradOptions options;
    Apply(options, config);
    return std::make_unique<optim::Adagrad>(params, options);
  }
  if (config.kind() == "RMSprop") {
    optim::RMSpropOptions options;
    Apply(options, config);
    return std::make_unique<optim::RMSprop>(params, options);
  }
  if (config.kind() == "Ftrl") {
    est::optim::FtrlOptions options;
    Apply(options, config);
    return std::make_unique<est::optim::Ftrl>(params, options);
  }
  EST_THROW(ConfigError, "a ps was sent optimizer kind '", config.kind(), "'; it applies ", kSupportedKinds);
}

void SetShardOptimizerOptions(optim::Optimizer& optimizer, const ps::OptimizerConfig& config) {
  optim::OptimizerOptions& options = optimizer.param_groups().front().options();
  if (auto* sgd = dynamic_cast<optim::SGDOptions*>(&options)) {
    CheckKind(config, "SGD");
    Apply(*sgd, config);
  } else if (auto* adamw = dynamic_cast<optim::AdamWOptions*>(&options)) {
    CheckKind(config, "AdamW");
    ApplyAdam(*adamw, config);
  } else if (auto* adam = dynamic_cast<optim::AdamOptions*>(&options)) {
    CheckKind(config, "Adam");
    ApplyAdam(*adam, config);
  } else if (auto* adagrad = dynamic_cast<optim::AdagradOptions*>(&options)) {
    CheckKind(config, "Adagrad");
    Apply(*adagrad, config);
  } else if (auto* rmsprop = dynamic_cast<optim::RMSpropOptions*>(&options)) {
    CheckKind(config, "RMSprop");
    Apply(*rmsprop, config);
  } else if (auto* ftrl = dynamic_cast<est::optim::FtrlOptions*>(&options)) {
    CheckKind(config, "Ftrl");
    Apply(*ftrl, config);
  } else {
    EST_ASSERT(false, "a shard optimizer made by MakeShardOptimizer");
  }
}

OptimizerSlots GetOptimizerSlots(const optim::Optimizer& optimizer, const at::Tensor& variable) {
  OptimizerSlots slots;
  if (auto* sgd = FindState<optim::SGDParamState>(optimizer, variable)) {
    AddIfDefined(slots, "momentum_buffer", sgd->momentum_buffer());
  } else if (auto* adamw = FindState<optim::AdamWParamState>(optimizer, variable)) {
    slots.emplace_back("step", StepTensor(adamw->step()));
    AddIfDefined(slots, "exp_avg", adamw->exp_avg());
    AddIfDefined(slots, "exp_avg_sq", adamw->exp_avg_sq());
    AddIfDefined(slots, "max_exp_avg_sq", adamw->max_exp_avg_sq());
  } else if (auto* adam = FindState<optim::AdamParamState>(optimizer, variable)) {
    slots.emplace_back("step", StepTensor(adam->step()));
    AddIfDefined(slots, "exp_avg", adam->exp_avg());
    AddIfDefined(slots, "exp_avg_sq", adam->exp_avg_sq());
    AddIfDefined(slots, "max_exp_avg_sq", adam->max_exp_avg_sq());
  } else if (auto* adagrad = FindState<optim::AdagradParamState>(optimizer, variable)) {
    slots.emplace_back("step", StepTensor(adagrad->step()));
    AddIfDefined(slots, "sum", adagrad->sum());
  } else if (auto* rmsprop = FindState<optim::RMSpropParamState>(optimizer, variable)) {
    slots.emplace_back("step", StepTensor(rmsprop->step()));
    AddIfDefined(slots, "square_avg", rmsprop->square_avg());
    AddIfDefined(slots, "momentum_buffer", rmsprop->momentum_buffer());
    AddIfDefined(slots, "grad_avg", rmsprop->grad_avg());
  } else if (auto* ftrl = FindState<est::optim::FtrlParamState>(optimizer, variable)) {
    AddIfDefined(slots, "accumulator", ftrl->accumulator());
    AddIfDefined(slots, "linear", ftrl->linear());
  }
  return slots;
}

void SetOptimizerSlots(optim::Optimizer& optimizer, const at::Tensor& variable, const OptimizerSlots& slots) {
  if (slots.empty()) return;  // a fresh optimizer's own state (Adagrad's initial sums)
  for (const auto& [slot, tensor] : slots)
    EST_CHECK(!SlotIsSharded(tensor) || tensor.sizes() == variable.sizes(), ConfigError, "optimizer slot '", slot,
              "' has shape ", tensor.sizes(), " but its variable ", variable.sizes());
  const auto slot = [&](const char* name) {
    at::Tensor tensor = SlotOrUndefined(slots, name);
    return tensor.defined() ? tensor.to(variable.device()) : tensor;
  };
  const optim::OptimizerOptions& options = optimizer.param_groups().front().options();
  if (dynamic_cast<const optim::SGDOptions*>(&options)) {
    auto state = std::make_unique<optim::SGDParamState>();
    state->momentum_buffer(slot("momentum_buffer"));
    PutState(optimizer, variable, std::move(state));
  } else if (dynamic_cast<const optim::AdamWOptions*>(&options)) {
    auto state = std::make_unique<optim::AdamWParamState>();
    state->step(StepValue(slots)).exp_avg(slot("exp_avg")).exp_avg_sq(slot("exp_avg_sq"));
    state->max_exp_avg_sq(slot("max_exp_avg_sq"));
    PutState(optimizer, variable, std::move(state));
  } else if (dynamic_cast<const optim::AdamOptions*>(&options)) {
    auto state = std::make_unique<optim::AdamParamState>();
    state->step(StepValue(slots)).exp_avg(slot("exp_avg")).exp_avg_sq(slot("exp_avg_sq"));
    state->max_exp_avg_sq(slot("max_exp_avg_sq"));
    PutState(optimizer, variable, std::move(state));
  } else if (dynamic_cast<const optim::AdagradOptions*>(&options)) {
    auto state = std::make_unique<optim::AdagradParamState>();
    state->step(StepValue(slots)).sum(slot("sum"));
    PutState(optimizer, variable, std::move(state));
  } else if (dynamic_cast<const optim::RMSpropOptions*>(&options)) {
    auto state = std::make_unique<optim::RMSpropParamState>();
    state->step(StepValue(slots)).square_avg(slot("square_avg")).momentum_buffer(slot("momentum_buffer"));
    state->grad_avg(slot("grad_avg"));
    PutState(optimizer, variable, std::move(state));
  } else if (dynamic_cast<const est::optim::FtrlOptions*>(&options)) {
    auto state = std::make_unique<est::optim::FtrlParamState>();
    state->accumulator(slot("accumulator")).linear(slot("linear"));
    EST_CHECK(state->accumulator().defined() && state->linear().defined(), ConfigError,
              "Ftrl state needs both slots 'accumulator' and 'linear'");
    PutState(optimizer, variable, std::move(state));
  } else {
    EST_THROW(ConfigError, "optimizer state for an optimizer of type ", c10::demangle(typeid(optimizer).name()),
              ", which parameter servers cannot apply");
  }
}

bool SlotIsSharded(const at::Tensor& slot) { return slot.dim() > 0; }

}  // namespace est::distribute
