#pragma once
/// ReplicaContext: where a model_fn call runs among the replicas that train in sync, and
/// collectives over them (tf.distribute.ReplicaContext).

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

#include "distribute/collective/collective.h"

namespace est {
namespace distribute {
class ReplicaGroup;
}

/// What model_fn knows of the other replicas: its own place, and collectives that every
/// replica calls (ModelContext::replica_context()). The replicas are those of one training
/// step: each local replica of each worker of a multi-worker strategy; a parameter-server
/// worker's local replicas; one replica in evaluation and prediction unless they are
/// distributed. Collectives are differentiable: the gradient of a value that feeds the loss
/// goes back to every replica that brought a part of it, so that the averaged gradients are
/// those of the mean loss over the global batch.
///
/// Every replica must call the same collectives, in the same order, with tensors of the same
/// shape and dtype. A collective that one local replica calls and another does not fails at
/// once with a ModelError naming them; one that another worker does not call fails after the
/// strategy's collective timeout with a TimeoutError.
class ReplicaContext {
 public:
  /// One replica alone: collectives return their input's value.
  ReplicaContext() = default;
  /// Framework side: local replica `local` of `group`, on the task `task_type`:`task_id`.
  ReplicaContext(distribute::ReplicaGroup* group, int local, std::string task_type, int task_id);

  /// This replica's index in [0, num_replicas_in_sync()): worker-major, as the workers' ranks.
  int replica_id_in_sync_group() const;
  /// Number of replicas that call the collectives (the replicas in sync).
  int num_replicas_in_sync() const;
  /// This task's job in the cluster ("chief", "worker", "evaluator"; empty without a cluster).
  const std::string& task_type() const { return task_type_; }
  /// This task's index within its job.
  int task_id() const { return task_id_; }

  /// The SUM or MEAN over every replica of `value`, on this replica's device.
  at::Tensor all_reduce(distribute::ReduceOp op, const at::Tensor& value);
  /// Every replica's `value` concatenated along `axis` in replica order (at least one dimension).
  at::Tensor all_gather(const at::Tensor& value, int64_t axis = 0);

 private:
  distribute::ReplicaGroup* group_ = nullptr;
  int local_ = 0;
  std::string task_type_;
  int task_id_ = 0;
};

}  // namespace est
