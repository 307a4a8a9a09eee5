#pragma once
/// ReplicaGroup: the replicas that model_fn's own collectives span (tf.distribute's
/// ReplicaContext.all_reduce): this process's local replicas, which run model code on
/// threads of their own taking turns, and through a Collective those of the other workers.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "distribute/collective/collective.h"

namespace est::distribute {

/// Runs the local replicas' model code so that a replica may wait inside it for the others
/// (a collective), and combines what they bring. With one local replica the code runs on the
/// caller's thread. With several, each replica has a thread of its own and they take turns:
/// one runs at a time, in replica order, until it finishes or calls a collective; a
/// collective completes when every local replica has called it, and then replica 0 goes on
/// first again. The order of everything they do is therefore the order of a loop over the
/// replicas where no collective is called, and results do not depend on thread timing.
///
/// A collective that one local replica calls and another never does (it returns, or throws)
/// fails at once with a ModelError naming both; one that another worker never calls fails
/// with the Collective's TimeoutError. Every replica must call the same collectives, in the
/// same order, with tensors of the same shape and dtype.
class ReplicaGroup {
 public:
  /// Gives the collective to the other workers' groups, on first use.
  using ConnectWorkers = std::function<Collective&()>;

  /// `local_replicas` of this process, alone (`workers` 1) or beside the groups of the other
  /// `workers` (each with as many local replicas), this one being `worker_index`, reached
  /// through the collective `connect` gives (ranks as worker indices) when first needed.
  /// A local replica waits for the others without a limit of its own: they are running model
  /// code, and every wait of theirs has one.
  ReplicaGroup(int local_replicas, int workers = 1, int worker_index = 0, ConnectWorkers connect = nullptr);
  ~ReplicaGroup();
  ReplicaGroup(const ReplicaGroup&) = delete;
  ReplicaGroup& operator=(const ReplicaGroup&) = delete;

  /// Number of local replicas.
  int local_replicas() const { return local_replicas_; }
  /// Number of replicas in the group, over every worker.
  int size() const { return local_replicas_ * workers_; }
  /// The index in the group of local replica `local`: worker-major, as the workers' ranks.
  int replica_id(int local) const { return worker_index_ * local_replicas_ + local; }

  /// Calls fn(r) for every local replica r, taking turns as the class says, with the caller's
  /// thread-local state (grad mode, autocast). Returns when every call has; then rethrows the
  /// error of the lowest replica that failed.
  void run(const std::function<void(int replica)>& fn);

  /// The SUM or MEAN of every replica's `value`, on local replica `local`'s device; called by
  /// local replica `local` from run()'s fn. Integer means truncate.
  at::Tensor all_reduce(int local, const at::Tensor& value, ReduceOp op);
  /// Every replica's `value` concatenated along `axis`, in replica_id order.
  at::Tensor all_gather(int local, const at::Tensor& value, int64_t axis);

  /// While it lives, collectives do not wait for anyone: each returns what it would if every
  /// replica had brought the same value. For model code run once by one replica alone, whose
  /// results are not kept (creating state before a restore).
  class Alone {
   public:
    explicit Alone(ReplicaGroup& group);
    ~Alone();
    Alone(const Alone&) = delete;
    Alone& operator=(const Alone&) = delete;

   private:
    ReplicaGroup& group_;
  };

 private:
  struct Turns;
  using Combine = std::function<at::Tensor(const std::vector<at::Tensor>& local_values)>;
  /// Deposits local replica `local`'s value for the collective `what`, waits until every
  /// local replica has, and returns what `combine` (run once, by the last to arrive) made,
  /// on `local`'s value's device.
  at::Tensor exchange(int local, const char* what, const at::Tensor& value, const Combine& combine);
  /// Runs `call` on the collective to the other workers (connected on first use), naming the
  /// collective `what` in a timeout.
  void across_workers(const char* what, const std::function<void(Collective&)>& call);

  const int local_replicas_;
  const int workers_;
  const int worker_index_;
  const ConnectWorkers connect_;
  Collective* workers_collective_ = nullptr;
  bool alone_ = false;
  std::unique_ptr<Turns> turns_;  ///< null with one local replica
};

}  // namespace est::distribute
