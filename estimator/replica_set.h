#pragma once
/// ReplicaSet: the local replicas of a strategy, one ModelContext per local device, whose
/// state starts equal everywhere. Internal to the estimator.

#include <functional>
#include <memory>
#include <vector>

#include "estimator/channels_last.h"
#include "estimator/model_context.h"

namespace est {
namespace distribute {
class ReplicaGroup;
class Strategy;
struct ClusterConfig;
}

/// Creates one ModelContext per local replica of `strategy`. Replica 0's new variables are
/// filled by `restore` (from a checkpoint: RestoreFromCheckpoint, WarmStartFromCheckpoint),
/// then handed to `initialize_from_training` (when set; training's StepSync makes them the
/// training's current values); the other local replicas copy replica 0's values. Every
/// replica's new optimizers go through `restore.optimizer`, when it is set.
/// Replica 0 must create its state first, as it does when model_fn runs replica by replica.
/// A replica lays out 4-D tensors channels-last as `channels_last` says for its device.
/// The replicas form a distribute::ReplicaGroup (their ModelContext::replica_context(), on
/// `cluster`'s task), whose run() runs their model code.
class ReplicaSet {
 public:
  /// Makes replica 0's new variables the training's current values.
  using VariablesInitializer = std::function<void(const NamedTensors& variables)>;

  ReplicaSet(distribute::Strategy& strategy, std::shared_ptr<const nlohmann::json> params,
             ModelContext::Initializers restore, VariablesInitializer initialize_from_training,
             ChannelsLast channels_last = ChannelsLast::kOff, const distribute::ClusterConfig* cluster = nullptr);
  ~ReplicaSet();

  /// Number of local replicas.
  int size() const { return static_cast<int>(replicas_.size()); }
  /// The context of local replica `index`.
  ModelContext& replica(int index) { return *replicas_.at(static_cast<size_t>(index)); }
  /// The group whose run() runs the replicas' model code, so that they may call collectives.
  distribute::ReplicaGroup& group() { return *group_; }

 private:
  ModelContext::Initializers initializers_for(int index, const ModelContext::Initializers& restore,
                                              VariablesInitializer initialize_from_training);

  std::vector<std::unique_ptr<ModelContext>> replicas_;
  std::unique_ptr<distribute::ReplicaGroup> group_;
};

}  // namespace est
