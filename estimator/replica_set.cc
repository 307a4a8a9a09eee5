#include "estimator/replica_set.h"

#include <torch/types.h>

#include <map>

#include "checkpoint/checkpoint_reader.h"
#include "common/error.h"
#include "distribute/strategy.h"
#include "estimator/model_checkpoint.h"

namespace est {

ReplicaSet::ReplicaSet(distribute::Strategy& strategy, std::shared_ptr<const nlohmann::json> params,
                       std::shared_ptr<const checkpoint::CheckpointReader> restore_from, bool restore_optimizers,
                       VariablesInitializer initialize_from_training, ChannelsLast channels_last)
    : strategy_(strategy) {
  const std::vector<c10::Device> devices = strategy.local_devices();
  for (size_t i = 0; i < devices.size(); ++i) {
    replicas_.push_back(std::make_unique<ModelContext>(
        params, devices[i], initializers_for(static_cast<int>(i), restore_from, restore_optimizers, initialize_from_training),
        UsesChannelsLast(channels_last, devices[i])));
  }
}

ModelContext::Initializers ReplicaSet::initializers_for(int index,
                                                        const std::shared_ptr<const checkpoint::CheckpointReader>& reader,
                                                        bool restore_optimizers,
                                                        VariablesInitializer initialize_from_training) {
  ModelContext::Initializers restore = reader ? RestoreFromCheckpoint(reader, restore_optimizers)
                                              : ModelContext::Initializers{};
  ModelContext::Initializers initializers;
  initializers.optimizer = restore.optimizer;
  if (index == 0) {
    initializers.variables = [restore = restore.variables, initialize_from_training](const NamedTensors& variables) {
      if (restore) restore(variables);
      if (initialize_from_training) initialize_from_training(variables);
    };
  } else {
    initializers.variables = [this, index](const NamedTensors& variables) {
      const NamedTensors first = replica(0).variables();
      torch::NoGradGuard no_grad;
      for (auto [name, tensor] : variables) {
        auto it = std::find_if(first.begin(), first.end(), [&name = name](const auto& entry) { return entry.first == name; });
        EST_CHECK(it != first.end(), ModelError, "replica ", index, " created variable '", name, "', which replica 0 does not have: model_fn must create the same "
                  "state on every replica");
        EST_CHECK(it->second.sizes() == tensor.sizes(), ModelError, "variable '", name, "' has shape ",
                  tensor.sizes(), " on replica ", index, " and ", it->second.sizes(), " on replica 0");
        tensor.copy_(it->second);
      }
    };
  }
  return initializers;
}

namespace {

// Makes `tensors` (on one device) equal to the chief's, one broadcast per dtype.
void BroadcastCoalesced(distribute::Strategy& strategy, const std::vector<at::Tensor>& tensors) {
  if (strategy.num_workers() == 1) return;
  std::map<at::ScalarType, std::vector<at::Tensor>> by_dtype;
  for (const at::Tensor& tensor : tensors) by_dtype[tensor.scalar_type()].push_back(tensor);
  for (auto& [dtype, group] : by_dtype) {
    std::vector<at::Tensor> flat_parts;
    for (const at::Tensor& tensor : group) flat_parts.push_back(tensor.reshape({-1}));
    std::vector<at::Tensor> flat = {at::cat(flat_parts)};
    strategy.broadcast_from_chief(flat);
    int64_t offset = 0;
    for (at::Tensor& tensor : group) {
      tensor.copy_(flat.front().narrow(0, offset, tensor.numel()).view(tensor.sizes()));
      offset += tensor.numel();
    }
  }
}

}  // namespace

void ReplicaSet::sync_buffers() {
  const distribute::BufferSync sync = strategy_.buffer_sync();
  if (sync == distribute::BufferSync::kNone || strategy_.num_replicas_in_sync() == 1) return;
  std::vector<std::vector<at::Tensor>> buffers;  // [replica][buffer]
  for (const auto& replica : replicas_) buffers.push_back(replica->buffers());
  const size_t count = buffers.front().size();
  if (count == 0) return;
  torch::NoGradGuard no_grad;
  // Floating-point buffers under kAverage become their mean, in one call; the others take
  // the chief's first replica's values.
  const auto averaged = [&](size_t i) {
    return sync == distribute::BufferSync::kAverage && at::isFloatingType(buffers.front()[i].scalar_type());
  };
  std::vector<std::vector<at::Tensor>> means(buffers.size());
  std::vector<at::Tensor> from_chief;
  for (size_t i = 0; i < count; ++i) {
    if (averaged(i)) {
      for (size_t r = 0; r < buffers.size(); ++r) means[r].push_back(buffers[r][i]);
    } else {
      from_chief.push_back(buffers.front()[i]);
    }
  }
  if (!means.front().empty()) strategy_.average_across_replicas(means);
  if (from_chief.empty()) return;
  BroadcastCoalesced(strategy_, from_chief);
  for (size_t r = 1; r < buffers.size(); ++r) {
    for (size_t i = 0; i < count; ++i)
      if (!averaged(i)) buffers[r][i].copy_(buffers.front()[i]);
  }
}

}  // namespace est
