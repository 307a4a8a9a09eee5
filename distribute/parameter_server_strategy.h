#pragma once
/// ParameterServerStrategy: training with ps tasks that hold the variables while workers pull
/// them, compute gradients and push them back (TensorFlow's ParameterServerStrategy with
/// Estimator): asynchronous, with bounded staleness, or synchronous with backup workers
/// (SyncReplicasOptimizer).

#include <torch/arg.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "distribute/cluster/cluster_config.h"
#include "distribute/training_place.h"
#include "distribute/parameter_server/placement.h"
#include "distribute/rendezvous/grpc_store.h"
#include "distribute/strategy.h"
#include "net/tls_options.h"

namespace est::distribute {

class PsConnection;

/// How workers' updates meet on the ps tasks.
enum class ParameterServerMode {
  /// Each worker pulls, computes and pushes at its own pace; every push is applied as it
  /// arrives and advances the global step.
  kAsync,
  /// As kAsync, but a worker's pull waits while it is more than `staleness` steps ahead of
  /// the slowest live worker (stale synchronous parallel).
  kBoundedStaleness,
  /// Gradients of one step are averaged on the ps tasks until replicas_to_aggregate have
  /// arrived, then applied once; gradients of an older step are dropped.
  kSync,
};

/// "async", "bounded" or "sync".
const char* ParameterServerModeName(ParameterServerMode mode);
/// Parses a mode name; ConfigError naming the choices otherwise.
ParameterServerMode ParseParameterServerMode(const std::string& name);

/// Options of ParameterServerStrategy.
struct ParameterServerOptions {
  /// How updates meet.
  TORCH_ARG(ParameterServerMode, mode) = ParameterServerMode::kAsync;
  /// kBoundedStaleness: the most steps a worker may be ahead of the slowest live one.
  TORCH_ARG(int, staleness) = 2;
  /// kSync: gradients averaged per step; 0 means every worker.
  TORCH_ARG(int, replicas_to_aggregate) = 0;
  /// kSync: workers pushing each step; 0 means every worker. More than replicas_to_aggregate
  /// makes the others backup workers, whose late gradients are dropped.
  TORCH_ARG(int, total_num_replicas) = 0;
  /// This worker's device (one replica per worker).
  TORCH_ARG(std::string, device) = "cpu";
  /// The cluster, with a "ps" job; when unset, the Estimator hands the strategy
  /// RunConfig::cluster (from TF_CONFIG) before training.
  TORCH_ARG(std::optional<ClusterConfig>, cluster);
  /// Identifies the job to the ps tasks; EST_JOB_ID, else derived from the chief's address.
  TORCH_ARG(std::string, job_id);
  /// The job's shared secret; EST_JOB_TOKEN when empty.
  TORCH_ARG(std::string, job_token);
  /// TLS for the ps tasks' services; from the EST_TLS_* variables when unset.
  TORCH_ARG(std::optional<net::TlsOptions>, tls);
  /// Limit on every call to a ps task (reconnecting included) and on waiting for the chief to
  /// initialize the variables, in seconds. Bounded and sync updates stop waiting for a worker
  /// not heard from for half of it.
  TORCH_ARG(double, timeout_secs) = 300;
  /// How variables are cut and spread over the ps tasks (num_ps comes from the cluster).
  TORCH_ARG(PlacementOptions, placement);
};

/// Variables live on the cluster's ps tasks; each worker (the chief is worker 0) trains one
/// replica and updates them there. The chief initializes the ps tasks (from its checkpoint
/// or its fresh variables) unless they hold variables already, and writes checkpoints of
/// their values and optimizer state. On a ps task, serve() runs the variable service.
/// Made without a cluster, it knows its place once configure() gives it one; asking before
/// is a ConfigError.
class ParameterServerStrategy : public Strategy {
 public:
  /// ConfigError for a cluster without a ps job or without workers, a malformed address or
  /// device, or options out of range (those that depend on the cluster: once it is given).
  explicit ParameterServerStrategy(ParameterServerOptions options = {});
  /// A shared strategy, ready for RunConfig::train_distribute.
  static std::shared_ptr<ParameterServerStrategy> Create(ParameterServerOptions options = {});
  ~ParameterServerStrategy() override;

  std::string name() const override { return "ParameterServerStrategy"; }
  std::vector<c10::Device> local_devices() const override { return {device_}; }
  /// Adopts `cluster` when made without one; checks that it agrees otherwise.
  void configure(const ClusterConfig& cluster) override;
  /// ConfigError while the strategy has no cluster.
  TrainingPlace place() const override { return PlaceOrThrow(place_, name(), "ParameterServerOptions::cluster"); }
  /// kSync: replicas_to_aggregate (each worker's batch is a share of the aggregated step's);
  /// otherwise 1 (each worker's step is an update of its own).
  int num_replicas_in_sync() const override;
  /// Each worker's own step over variables on the ps tasks; each worker keeps its own
  /// buffers (checkpoints hold the chief's).
  TrainingSync make_training_sync(const StepSyncOptions& options) override;
  /// On a ps task: serves its variables at its cluster address until the chief finishes the
  /// job (then returns) or a stop signal arrives (Interrupted).
  void serve() override;

  /// The options, with the defaults filled in from the cluster (once known) and the environment.
  const ParameterServerOptions& options() const { return options_; }
  /// The cluster this strategy trains in (ConfigError before it has one).
  const ClusterConfig& cluster() const;

 private:
  /// Takes `cluster` as the one this strategy trains in, and checks the options against it.
  void adopt(const ClusterConfig& cluster);

  ParameterServerOptions options_;
  std::optional<ClusterConfig> cluster_;  ///< unset until given (options or configure())
  c10::Device device_;
  std::optional<TrainingPlace> place_;
  std::shared_ptr<PsConnection> connection_;  ///< made on first use
};

}  // namespace est::distribute
