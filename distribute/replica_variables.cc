// The VariableStore of replicas in this process: the chief's values at creation, each
// replica's optimizer step, buffers made equal as the strategy's BufferSync says.

#include <ATen/ATen.h>
#include <torch/types.h>

#include <map>
#include <memory>
#include <vector>

#include "distribute/step_sync.h"
#include "distribute/strategy.h"

namespace est::distribute {
namespace {

// Makes `tensors` (on one device) equal to the chief's, one broadcast per dtype.
void BroadcastCoalesced(Strategy& strategy, const std::vector<at::Tensor>& tensors) {
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

class ReplicaVariables final : public VariableStore {
 public:
  ReplicaVariables(Strategy& strategy, BufferSync buffers) : strategy_(strategy), buffers_(buffers) {}

  void initialize(const NamedVariables& variables) override {
    std::vector<at::Tensor> tensors;
    for (const auto& [name, tensor] : variables) tensors.push_back(tensor);
    strategy_.broadcast_from_chief(tensors);
  }

  int64_t apply(std::vector<ReplicaStep>& replicas, const StepUpdate& update, StepFlags&) override {
    if (update.finite) update.step_optimizers();
    sync_buffers(replicas);
    return update.global_step + 1;
  }

 private:
  // Every replica's buffers made equal everywhere, before hooks and checkpoints see them:
  // floating-point buffers under kAverage become their mean, in one call; the others take
  // the chief's first replica's values.
  void sync_buffers(const std::vector<ReplicaStep>& replicas) {
    if (buffers_ == BufferSync::kNone || strategy_.num_replicas_in_sync() == 1) return;
    const size_t count = replicas.front().buffers.size();
    if (count == 0) return;
    torch::NoGradGuard no_grad;
    const auto averaged = [&](size_t i) {
      return buffers_ == BufferSync::kAverage && at::isFloatingType(replicas.front().buffers[i].scalar_type());
    };
    std::vector<std::vector<at::Tensor>> means(replicas.size());
    std::vector<at::Tensor> from_chief;
    for (size_t i = 0; i < count; ++i) {
      if (averaged(i)) {
        for (size_t r = 0; r < replicas.size(); ++r) means[r].push_back(replicas[r].buffers.at(i));
      } else {
        from_chief.push_back(replicas.front().buffers[i]);
      }
    }
    if (!means.front().empty()) strategy_.average_across_replicas(means);
    if (from_chief.empty()) return;
    BroadcastCoalesced(strategy_, from_chief);
    for (size_t r = 1; r < replicas.size(); ++r) {
      for (size_t i = 0; i < count; ++i)
        if (!averaged(i)) replicas[r].buffers.at(i).copy_(replicas.front().buffers[i]);
    }
  }

  Strategy& strategy_;
  const BufferSync buffers_;
};

}  // namespace

std::unique_ptr<VariableStore> CreateReplicaVariables(Strategy& strategy, BufferSync buffers) {
  return std::make_unique<ReplicaVariables>(strategy, buffers);
}

}  // namespace est::distribute
