#pragma once
/// MultiWorkerMirroredStrategy: synchronous training over several worker processes with
/// collective all-reduce (tf.distribute.MultiWorkerMirroredStrategy).

#include <torch/arg.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "distribute/cluster/cluster_config.h"
#include "distribute/collective/collective_backend.h"
#include "distribute/elastic/elastic_group.h"
#include "distribute/rendezvous/grpc_store.h"
#include "distribute/rendezvous/settings_agreement.h"
#include "distribute/strategy.h"
#include "distribute/training_place.h"
#include "net/tls_options.h"

namespace est::distribute {

class Store;

/// Options of MultiWorkerMirroredStrategy.
struct MultiWorkerOptions {
  /// How gradients travel between workers (tf.distribute's CommunicationImplementation): a
  /// collective backend's name ("ring", "nccl": CollectiveBackends()) or "auto", the first
  /// backend of this build that serves every device (ChooseCollectiveBackend).
  TORCH_ARG(std::string, communication) = "auto";
  /// This worker's replicas, one per device. None (the default): the GPU of this task's local
  /// rank where LibTorch sees GPUs (DeviceOfLocalRank), else the CPU; logged once.
  TORCH_ARG(std::vector<std::string>, devices);
  /// The cluster; when unset, the Estimator hands the strategy RunConfig::cluster (from
  /// TF_CONFIG, torchrun or Slurm variables) before training.
  TORCH_ARG(std::optional<ClusterConfig>, cluster);
  /// Identifies the job in the chief's store; EST_JOB_ID, else derived from the chief's address.
  TORCH_ARG(std::string, job_id);
  /// The job's shared secret, sent with every call to the chief's store, which refuses calls
  /// without it; EST_JOB_TOKEN when empty. Every task of the job must have the same.
  TORCH_ARG(std::string, job_token);
  /// TLS for the connections to the chief's store (PEM files); from EST_TLS_CA_FILE,
  /// EST_TLS_CERT_FILE, EST_TLS_KEY_FILE and EST_TLS_REQUIRE_CLIENT_CERT when unset. The chief
  /// serves with cert_file and key_file; every task trusts ca_file.
  TORCH_ARG(std::optional<net::TlsOptions>, tls);
  /// Limit on the rendezvous and on every collective call, in seconds.
  TORCH_ARG(double, timeout_secs) = 300;
  /// In-job recovery: when a worker other than the chief is lost, the others re-form the
  /// group without it and go on while at least this many are left (a membership generation
  /// of the chief's store; the step being taken is taken again). 0, the default: the
  /// EST_MIN_WORKERS variable (est-launch --min-workers sets it), else none, and a lost worker
  /// ends the training.
  TORCH_ARG(int, min_workers) = 0;
  /// With in-job recovery, the most workers the training group may hold: a worker started
  /// while it trains (a task index beyond the cluster's first ones) joins it while fewer train,
  /// and waits otherwise. 0, the default: the EST_MAX_WORKERS variable (est-launch
  /// --max-workers sets it), else the cluster's training workers.
  TORCH_ARG(int, max_workers) = 0;
  /// With in-job recovery, how long the chief waits for a beat of a worker (each beats every
  /// 0.5 s from a thread of its own) before it counts that worker lost: its host is gone, cut
  /// off, or it is stopped. The chief then cuts its connections to it, so the others' calls
  /// fail now rather than after timeout_secs, and re-forms the group without it. At least 1 s.
  TORCH_ARG(double, beat_lease_secs) = 5;
  /// Gradient buckets all-reduced while backward runs (first bucket about 1 MB, then up to
  /// 25 MB), and the form of their float32 values on the wire (buckets().compression():
  /// none, or float16/bfloat16 with error feedback; needs one device per worker).
  TORCH_ARG(GradientReducerOptions, buckets);
  /// How replicas keep their buffers (BatchNorm's running statistics) equal.
  TORCH_ARG(BufferSync, buffer_sync) = BufferSync::kBroadcast;
};

/// Replicas on every worker of the training group (chief and workers) train in sync. The
/// chief serves the rendezvous store over gRPC at its cluster address (its host only);
/// workers connect on first use
/// (the first training step), so creating the strategy never blocks. On an evaluator task
/// the strategy has only its local replicas. Made without a cluster, it knows its place in
/// the training group once configure() gives it one; asking before is a ConfigError.
class MultiWorkerMirroredStrategy : public Strategy, private GenerationCollectives {
 public:
  /// Throws ConfigError for a malformed cluster or device, or a communication that cannot
  /// run here (ChooseCollectiveBackend).
  explicit MultiWorkerMirroredStrategy(MultiWorkerOptions options = {});
  /// A shared strategy, ready for RunConfig::train_distribute.
  static std::shared_ptr<MultiWorkerMirroredStrategy> Create(MultiWorkerOptions options = {});
  /// A strategy over an already connected collective (ranks as threads, tests), and another
  /// over the same ranks for model_fn's collectives (null: model_fn calls none across workers).
  static std::shared_ptr<MultiWorkerMirroredStrategy> CreateWithCollective(
      std::shared_ptr<Collective> collective, std::vector<std::string> devices = {"cpu"},
      BufferSync buffer_sync = BufferSync::kBroadcast, GradientReducerOptions buckets = {},
      std::shared_ptr<Collective> model_collective = nullptr);
  ~MultiWorkerMirroredStrategy() override;

  std::string name() const override { return "MultiWorkerMirroredStrategy"; }
  /// ConfigError while the devices wait for the cluster (no devices given, GPUs present).
  std::vector<c10::Device> local_devices() const override;
  /// Adopts `cluster` when made without one; checks that it agrees otherwise. A strategy
  /// made on a collective keeps the collective's ranks.
  void configure(const ClusterConfig& cluster) override;
  Collective* collective() override;
  /// The training group with in-job recovery (min_workers, or EST_MIN_WORKERS, set in a
  /// cluster of two or more workers); null otherwise.
  ElasticGroup* elastic() override { return elastic_.get(); }
  int model_collective_workers() const override { return num_workers(); }
  /// A second connection of the workers, beside the gradients', made on first use.
  Collective& model_collective() override;
  /// ConfigError while the strategy has neither a cluster nor a collective.
  TrainingPlace place() const override { return PlaceOrThrow(place_, name(), "MultiWorkerOptions::cluster"); }
  /// The bucketed all-reduce of options().buckets() over replicas whose buffers follow
  /// options().buffer_sync().
  TrainingSync make_training_sync(const StepSyncOptions& options) override;
  /// The options, as given, with the job's identity filled in once the cluster is known.
  const MultiWorkerOptions& options() const { return options_; }
  /// The cluster this strategy trains in (ConfigError before it has one).
  const ClusterConfig& cluster() const;

 private:
  MultiWorkerMirroredStrategy(std::shared_ptr<Collective> collective, std::vector<std::string> devices,
                              BufferSync buffer_sync, GradientReducerOptions buckets,
                              std::shared_ptr<Collective> model_collective);
  /// ConfigError for options that contradict each other.
  void check_options() const;
  /// Takes `cluster` as the one this strategy trains in.
  void adopt(const ClusterConfig& cluster);
  /// Takes `devices` as this worker's, with the collective backend that serves them.
  void use_devices(const std::vector<std::string>& devices);
  void connect();
  // GenerationCollectives: the collectives of the elastic group's generation.
  void connect_generation(int rank, int world_size, std::shared_ptr<Store> store) override;
  void close_generation() override;
  std::shared_ptr<Collective> generation_collective() override { return collective_; }
  void cut_off_others(const std::vector<int>& ranks) override;
  /// timeout_secs, the limit on the rendezvous and on every collective call.
  std::chrono::milliseconds timeout() const;
  /// beat_lease_secs.
  std::chrono::milliseconds beat_lease() const;
  /// This worker's request for a collective of the job over `store`.
  CollectiveRequest collective_request(std::shared_ptr<Store> store) const;
  /// What every worker must share, checked when they connect.
  StrategySettings settings() const;

  MultiWorkerOptions options_;
  std::optional<ClusterConfig> cluster_;  ///< unset until given (options or configure())
  std::vector<c10::Device> devices_;
  const CollectiveBackend* backend_ = nullptr;  ///< what connect() creates
  std::optional<TrainingPlace> place_;  ///< from the cluster, or the collective's ranks
  std::once_flag connected_;
  std::shared_ptr<Store> store_;  ///< the chief's store; on the chief, with its server
  std::shared_ptr<Store> job_store_;  ///< the job's keys, after the rendezvous
  std::shared_ptr<Store> collective_store_;  ///< the keys of collective()'s generation
  std::shared_ptr<Collective> collective_;
  std::mutex model_connect_mutex_;  ///< guards model_collective_, made on first use in each generation
  std::shared_ptr<Collective> model_collective_;
  std::unique_ptr<ElasticGroup> elastic_;  ///< with in-job recovery; destroyed first, and its heartbeat
};

}  // namespace est::distribute
