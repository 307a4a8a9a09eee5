#pragma once
/// Strategy: what a replica set is and how per-replica values become one
/// (tf.distribute.Strategy): run, reduce, gradient averaging, broadcast from the chief.

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "distribute/collective/collective.h"
#include "distribute/gradient_reducer.h"
#include "distribute/input_context.h"
#include "distribute/step_sync.h"
#include "distribute/training_place.h"

namespace est::distribute {

struct ClusterConfig;
class ElasticGroup;

/// A set of replicas that train in sync: the local replicas of this process (one per
/// local device) and, for multi-worker strategies, those of the other workers, reached
/// through a Collective. The estimator creates each local replica's variables on its
/// device, makes them equal to the chief's, and averages gradients over every replica
/// before each optimizer step.
class Strategy {
 public:
  virtual ~Strategy() = default;
  /// A short name for logs ("MirroredStrategy").
  virtual std::string name() const = 0;
  /// The devices of this process's replicas, one per local replica.
  virtual std::vector<c10::Device> local_devices() const = 0;
  /// Takes the cluster resolved once, by RunConfig; the Estimator calls it before anything
  /// else. A strategy made without a cluster adopts it; one made with a cluster of its own
  /// throws ConfigError unless both agree (CheckSameCluster). Strategies whose replicas all
  /// live in this process ignore it.
  virtual void configure(const ClusterConfig& cluster) {}
  /// The collective across worker processes, connected on first use; nullptr when every
  /// replica lives in this process.
  virtual Collective* collective() { return nullptr; }
  /// The workers whose replicas model_fn's collectives (ReplicaContext) reach: num_workers()
  /// where the replicas of every worker step in sync through a collective, else 1 (this
  /// process's replicas only, as on a parameter-server worker).
  virtual int model_collective_workers() const { return 1; }
  /// The collective of model_fn's collectives across workers: a connection of its own beside
  /// the gradients' (which backward may be using), made on first use. ConfigError where
  /// model_collective_workers() is 1.
  virtual Collective& model_collective();
  /// The training group's lifecycle where the group outlives a lost worker and takes in new
  /// ones (in-job recovery); null where a lost worker ends the training.
  virtual ElasticGroup* elastic() { return nullptr; }
  /// This task's place among the workers that train: one worker, the chief, by default.
  virtual TrainingPlace place() const { return {}; }
  /// Number of worker processes in the training group.
  int num_workers() const { return place().num_workers; }
  /// This worker's index in [0, num_workers).
  int worker_index() const { return place().worker_index; }
  /// True on the worker that writes checkpoints and summaries.
  bool is_chief() const { return place().is_chief; }
  /// The step seam of one training run: by default the all-reduce StepSync
  /// (CreateAllReduceStepSync, default buckets) over variables in this process's replicas
  /// whose buffers take the chief's values (CreateReplicaVariables). May connect to the other
  /// workers.
  virtual TrainingSync make_training_sync(const StepSyncOptions& options);

  /// Runs this process's task when it serves the training tasks instead of training (a ps
  /// task holding variables), until the job is finished. ConfigError for a strategy without
  /// such tasks.
  virtual void serve();

  /// Local replicas of this process.
  int num_local_replicas() const { return static_cast<int>(local_devices().size()); }
  /// Replicas that take part in one synchronous step, over every worker.
  virtual int num_replicas_in_sync() const { return num_local_replicas() * num_workers(); }
  /// The InputContext of this worker's input pipeline: one pipeline per worker.
  InputContext input_context() const;

  /// Calls fn(replica_index) for every local replica, in order, and returns the results
  /// (TensorFlow's PerReplica values).
  template <typename Fn>
  auto run(Fn&& fn) -> std::vector<std::invoke_result_t<Fn&, int>> {
    std::vector<std::invoke_result_t<Fn&, int>> results;
    for (int replica = 0; replica < num_local_replicas(); ++replica) results.push_back(fn(replica));
    return results;
  }

  /// tf.distribute.Strategy.reduce: combines one value per local replica over every
  /// replica in sync. Without `axis`, the SUM or MEAN of the values; with `axis`, each
  /// value is first reduced along that axis too (MEAN then weighs every element equally).
  /// The result is on the CPU, identical on every worker.
  at::Tensor reduce(ReduceOp op, const std::vector<at::Tensor>& per_replica, std::optional<int64_t> axis = std::nullopt);

  /// Averages over every replica in sync, in one collective call: `per_replica[r]` holds
  /// replica r's tensors (the same shapes and dtypes for every replica, e.g. gradients
  /// then the loss); on return each replica's tensor i holds the mean of tensor i over
  /// all replicas everywhere. Undefined tensors count as zeros and stay undefined. The
  /// local replicas are summed on the first local device when it is a CUDA device (then
  /// reduced across workers there and copied back to each replica's device), else on the CPU.
  void average_across_replicas(std::vector<std::vector<at::Tensor>>& per_replica);
  /// Sums `tensors` in place across workers (no-op with one worker).
  void sum_across_workers(std::vector<at::Tensor>& tensors);
  /// Reduces each worker's totals (already reduced over its own replicas: an evaluation's loss
  /// sum and metric states) in place across workers: kSum adds them, kMean averages them over
  /// the workers. The estimator's reductions go through this and reduce(), never through the
  /// raw collectives.
  void reduce_across_workers(ReduceOp op, std::vector<at::Tensor>& totals);
  /// The chief's `value` on every worker (`value` itself with one worker): how a worker checks
  /// that it agrees with the chief, e.g. on the global step it restored.
  int64_t chief_value(int64_t value);
  /// Makes `tensors` equal to the chief's values on every worker (no-op with one worker).
  void broadcast_from_chief(std::vector<at::Tensor>& tensors);
  /// True on every worker when `flag` is true on any worker (e.g. "my input ended").
  bool any_worker(bool flag);
  /// Returns once every worker has called barrier() (no-op with one worker).
  void barrier();
};

/// One replica on one device, as tf.distribute.OneDeviceStrategy.
class OneDeviceStrategy : public Strategy {
 public:
  /// `device` as LibTorch parses it: "cpu", "cuda:0", …; throws ConfigError when malformed.
  explicit OneDeviceStrategy(const std::string& device = "cpu");
  /// A shared strategy on `device`, ready for RunConfig::train_distribute.
  static std::shared_ptr<OneDeviceStrategy> Create(const std::string& device = "cpu");

  std::string name() const override { return "OneDeviceStrategy"; }
  std::vector<c10::Device> local_devices() const override { return {device_}; }

 private:
  c10::Device device_;
};

/// Several replicas in this process, one per listed device, as
/// tf.distribute.MirroredStrategy. The same device may be listed several times (several
/// CPU replicas), which is how its logic is tested without GPUs.
class MirroredStrategy : public Strategy {
 public:
  /// No devices (the default) takes every GPU LibTorch sees, else the CPU, as
  /// tf.distribute.MirroredStrategy() does, and logs which. Throws ConfigError for a
  /// malformed device name.
  explicit MirroredStrategy(const std::vector<std::string>& devices = {},
                            BufferSync buffer_sync = BufferSync::kBroadcast);
  /// A shared strategy over `devices`.
  static std::shared_ptr<MirroredStrategy> Create(const std::vector<std::string>& devices = {},
                                                  BufferSync buffer_sync = BufferSync::kBroadcast);

  std::string name() const override { return "MirroredStrategy"; }
  std::vector<c10::Device> local_devices() const override { return devices_; }
  TrainingSync make_training_sync(const StepSyncOptions& options) override;
  /// How the replicas keep their buffers equal.
  BufferSync buffer_sync() const { return buffer_sync_; }

 private:
  std::vector<c10::Device> devices_;
  BufferSync buffer_sync_;
};

/// Parses a device name ("cpu", "cuda:1"); ConfigError naming it when malformed.
c10::Device ParseDevice(const std::string& device);
/// Throws ConfigError naming `device` when LibTorch cannot place tensors there: a CUDA
/// device where LibTorch has no CUDA or sees no GPU, or an index past its last GPU.
/// Strategies may name devices of another machine; replicas check theirs when created.
void CheckDeviceAvailable(c10::Device device);

}  // namespace est::distribute
