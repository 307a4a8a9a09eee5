#include "distribute/parameter_server/variable_shards.h"

#include <torch/types.h>

#include <sstream>

#include "distribute/parameter_server/shard_optimizer.h"

namespace est::distribute {
namespace {

std::string ShapeText(at::IntArrayRef shape) {
  std::ostringstream out;
  out << shape;
  return out.str();
}

}  // namespace

bool VariableShards::initialized() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return initialized_;
}

uint64_t VariableShards::plan() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return plan_;
}

int64_t VariableShards::global_step() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return global_step_;
}

std::string VariableShards::initialize(uint64_t plan, const std::vector<ps::ShardSpec>& specs,
                                       std::map<TensorKey, at::Tensor> tensors, int64_t global_step,
                                       const std::map<uint32_t, int64_t>& input_positions, bool& initialized_now) {
  std::unique_lock<std::shared_mutex> version(version_mutex_);
  std::lock_guard<std::mutex> lock(mutex_);
  initialized_now = false;
  if (initialized_) {
    if (plan == plan_) return "";
    return "this ps task holds variables of another placement plan (another model, or another number of ps "
           "tasks) than the chief's";
  }
  std::map<uint32_t, std::unique_ptr<Shard>> shards;
  for (const ps::ShardSpec& spec : specs) {
    auto value = tensors.find({spec.id(), ""});
    const std::string name = "shard " + std::to_string(spec.id()) + " ('" + spec.variable() + "' part " +
                             std::to_string(spec.part()) + ")";
    if (value == tensors.end()) return name + " came without its value";
    const std::vector<int64_t> shape(spec.shape().begin(), spec.shape().end());
    if (value->second.sizes() != at::IntArrayRef(shape) || static_cast<int32_t>(value->second.scalar_type()) != spec.dtype())
      return name + " has shape " + ShapeText(value->second.sizes()) + " and dtype " +
             std::string(c10::toString(value->second.scalar_type())) + ", its plan says " + ShapeText(shape);
    auto shard = std::make_unique<Shard>();
    shard->spec = spec;
    shard->value = value->second;
    if (spec.has_optimizer()) {
      shard->optimizer = MakeShardOptimizer(spec.optimizer(), shard->value);
      OptimizerSlots slots;
      for (auto it = tensors.lower_bound({spec.id(), std::string()}); it != tensors.end() && it->first.first == spec.id();
           ++it)
        if (!it->first.second.empty()) slots.emplace_back(it->first.second, it->second);
      SetOptimizerSlots(*shard->optimizer, shard->value, slots);
    }
    shards.emplace(spec.id(), std::move(shard));
  }
  shards_ = std::move(shards);
  plan_ = plan;
  global_step_ = global_step;
  input_positions_ = input_positions;
  last_sequence_.clear();
  initialized_ = true;
  initialized_now = true;
  return "";
}

std::string VariableShards::apply(const ShardPush& push, int64_t& global_step) {
  std::shared_lock<std::shared_mutex> version(version_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!initialized_) return "this ps task holds no variables yet";
    auto last = last_sequence_.find(push.worker);
    if (last != last_sequence_.end() && push.sequence <= last->second) {
      global_step = global_step_;  // a retry of a push already applied
      return "";
    }
    for (const auto& [id, gradient] : push.gradients) {
      auto shard = shards_.find(id);
      if (shard == shards_.end()) return "a gradient for shard " + std::to_string(id) + ", which this task does not hold";
      if (gradient.sizes() != shard->second->value.sizes() || gradient.scalar_type() != shard->second->value.scalar_type())
        return "the gradient of '" + shard->second->spec.variable() + "' part " +
               std::to_string(shard->second->spec.part()) + " has shape " + ShapeText(gradient.sizes()) +
               ", its shard " + ShapeText(shard->second->value.sizes());
    }
    last_sequence_[push.worker] = push.sequence;
  }
  for (const auto& [id, gradient] : push.gradients) {
    Shard& shard = *shards_.at(id);
    if (!shard.optimizer) continue;
    auto options = push.optimizers.find(id);
    std::lock_guard<std::mutex> lock(shard.mutex);
    if (options != push.optimizers.end()) SetShardOptimizerOptions(*shard.optimizer, options->second);
    shard.value.mutable_grad() = gradient;
    shard.optimizer->step();
    shard.value.mutable_grad() = at::Tensor();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  input_positions_[push.worker] = push.input_position;
  if (task_ == 0) ++global_step_;
  global_step = global_step_;
  return "";
}

ShardValues VariableShards::pull(bool with_state) const {
  std::shared_lock<std::shared_mutex> shared(version_mutex_, std::defer_lock);
  std::unique_lock<std::shared_mutex> consistent(version_mutex_, std::defer_lock);
  if (with_state) {
    consistent.lock();
  } else {
    shared.lock();
  }
  ShardValues values;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    values.global_step = global_step_;
    values.input_positions = input_positions_;
  }
  torch::NoGradGuard no_grad;
  for (const auto& [id, shard] : shards_) {
    std::lock_guard<std::mutex> lock(shard->mutex);
    values.tensors.push_back({id, "", shard->value.clone()});
    if (with_state && shard->optimizer)
      for (auto& [slot, tensor] : GetOptimizerSlots(*shard->optimizer, shard->value))
        values.tensors.push_back({id, slot, tensor.clone()});
  }
  return values;
}

}  // namespace est::distribute
