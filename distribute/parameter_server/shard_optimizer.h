#pragma once
/// The optimizer of a model_fn as a ps task rebuilds it: its kind and options
/// (OptimizerConfig) and its per-variable state as named tensors ("slots"), so that a ps
/// applies to its shard exactly the update the worker's optimizer would apply to the whole
/// variable. SGD (momentum, dampening, nesterov, weight decay), Adam, AdamW, Adagrad, RMSprop
/// and est::optim::Ftrl (its "accumulator" and "linear" slots cut with the variable); any other
/// optimizer is a ConfigError naming it. Internal to the parameter servers.

#include <ATen/core/Tensor.h>
#include <torch/optim/optimizer.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "distribute/parameter_server/variable_service.pb.h"

namespace est::distribute {

/// Named state tensors of one variable: slots of the variable's shape, cut with it along
/// dimension 0, and scalars ("step"), the same on every shard.
using OptimizerSlots = std::vector<std::pair<std::string, at::Tensor>>;

/// True when a parameter group of `optimizer` holds `variable`.
bool OptimizerHolds(const torch::optim::Optimizer& optimizer, const at::Tensor& variable);

/// The kind and options of the parameter group of `optimizer` that holds `variable`.
/// ConfigError naming `name` and the optimizer's type when it is not one a ps can apply, or
/// when no group holds `variable`.
ps::OptimizerConfig DescribeOptimizer(const torch::optim::Optimizer& optimizer, const at::Tensor& variable,
                                      const std::string& name);

/// A new optimizer of `config`'s kind and options over `value` alone.
std::unique_ptr<torch::optim::Optimizer> MakeShardOptimizer(const ps::OptimizerConfig& config, const at::Tensor& value);

/// Sets the options of `optimizer` (made by MakeShardOptimizer) to `config`'s; ConfigError
/// when `config` is of another kind.
void SetShardOptimizerOptions(torch::optim::Optimizer& optimizer, const ps::OptimizerConfig& config);

/// The state `optimizer` holds for `variable`; empty before its first step.
OptimizerSlots GetOptimizerSlots(const torch::optim::Optimizer& optimizer, const at::Tensor& variable);

/// Replaces the state `optimizer` holds for `variable` with `slots` (from
/// GetOptimizerSlots of an optimizer of the same kind); keeps the optimizer's own state when
/// `slots` is empty.
/// ConfigError naming a slot of another kind or shape.
void SetOptimizerSlots(torch::optim::Optimizer& optimizer, const at::Tensor& variable, const OptimizerSlots& slots);

/// True for a slot cut with its variable along dimension 0; false for a scalar.
bool SlotIsSharded(const at::Tensor& slot);

}  // namespace est::distribute
