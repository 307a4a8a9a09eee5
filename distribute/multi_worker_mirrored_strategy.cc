#include "distribute/multi_worker_mirrored_strategy.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/logging.h"
#include "distribute/cluster/cluster_address.h"
#include "distribute/cluster/cluster_environment.h"
#include "distribute/default_devices.h"
#include "distribute/rendezvous/grpc_store.h"
#include "distribute/rendezvous/rendezvous.h"
#include "distribute/rendezvous/settings_agreement.h"
#include "distribute/rendezvous/store.h"

namespace est::distribute {

namespace {

// The most workers a training group may hold (max_workers).
constexpr int kMaxWorkers = kMaxTrainingTasks;

std::vector<c10::Device> ParseDevices(const std::vector<std::string>& names) {
  EST_CHECK(!names.empty(), ConfigError, "MultiWorkerMirroredStrategy needs at least one device");
  std::vector<c10::Device> devices;
  for (const auto& name : names) devices.push_back(ParseDevice(name));
  return devices;
}

// The compression, with PowerSGD's options where they apply: every worker must agree on them.
std::string CompressionSetting(const GradientReducerOptions& buckets) {
  std::string setting = GradientCompressionName(buckets.compression());
  if (buckets.compression() == GradientCompression::kPowerSgd)
    setting += " rank " + std::to_string(buckets.power_sgd().rank()) + ", warm-up " +
               std::to_string(buckets.power_sgd().warmup_steps()) + " steps";
  return setting;
}

}  // namespace

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(MultiWorkerOptions options) : options_(std::move(options)) {
  if (!options_.devices().empty()) {
    use_devices(options_.devices());
  } else if (CudaDeviceCount() == 0) {
    Log().info("MultiWorkerMirroredStrategy: no devices given: the CPU (LibTorch sees no GPU)");
    use_devices({"cpu"});
  }  // else the GPU of the local rank, once the cluster is known
  check_options();
  if (options_.cluster()) adopt(*options_.cluster());
}

void MultiWorkerMirroredStrategy::use_devices(const std::vector<std::string>& devices) {
  devices_ = ParseDevices(devices);
  backend_ = &ChooseCollectiveBackend(options_.communication(), devices_, "MultiWorkerMirroredStrategy");
}

std::vector<c10::Device> MultiWorkerMirroredStrategy::local_devices() const {
  EST_CHECK(!devices_.empty(), ConfigError, "MultiWorkerMirroredStrategy takes the GPU of its task's local rank, "
            "which it knows once it has a cluster (MultiWorkerOptions::cluster, or the Estimator's RunConfig); "
            "or name its devices (MultiWorkerOptions::devices)");
  return devices_;
}

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(std::shared_ptr<Collective> collective,
                                                         std::vector<std::string> devices, BufferSync buffer_sync,
                                                         GradientReducerOptions buckets,
                                                         std::shared_ptr<Collective> model_collective)
    : options_(MultiWorkerOptions().buffer_sync(buffer_sync).buckets(buckets)),
      devices_(ParseDevices(devices)),
      collective_(std::move(collective)),
      model_collective_(std::move(model_collective)) {
  EST_CHECK(collective_ != nullptr, ConfigError, "MultiWorkerMirroredStrategy needs a collective");
  check_options();
  place_ = TrainingPlace{collective_->world_size(), collective_->rank(), collective_->rank() == 0};
}

void MultiWorkerMirroredStrategy::configure(const ClusterConfig& cluster) {
  if (cluster_) {
    CheckSameCluster(*cluster_, cluster, "the cluster of MultiWorkerOptions");
  } else if (!collective_) {
    adopt(cluster);
  }
}

void MultiWorkerMirroredStrategy::adopt(const ClusterConfig& cluster) {
  // A ps job would otherwise be ignored: the workers would train without it.
  const auto ps = cluster.cluster.find(TaskTypeName(TaskType::kPs));
  EST_CHECK(ps == cluster.cluster.end(), ConfigError, "MultiWorkerMirroredStrategy: ", cluster.source,
            " has a 'ps' job (", ps->second.size(), " task", ps->second.size() == 1 ? "" : "s",
            "), which it would not use: parameter servers need ParameterServerStrategy (est-train --strategy "
            "parameter_server); otherwise remove the ps job");
  cluster_ = cluster;
  place_ = PlaceInTraining(cluster);  // the evaluator: its local replicas only
  if (options_.job_id().empty()) options_.job_id(DefaultJobId(cluster.chief_address));
  if (options_.job_token().empty()) options_.job_token(JobTokenFromEnvironment());
  if (!options_.tls()) options_.tls(StoreTlsFromEnvironment());
  const int training_workers = std::max(1, cluster.num_worker_replicas);
  if (options_.min_workers() == 0)
    options_.min_workers(ReadIntVariable(ProcessEnvironment(), "EST_MIN_WORKERS", 1, training_workers).value_or(0));
  EST_CHECK(options_.min_workers() <= training_workers, ConfigError, "MultiWorkerMirroredStrategy: min_workers (",
            options_.min_workers(), ") exceeds the ", training_workers, " training workers of ", cluster.source);
  if (options_.max_workers() == 0)
    options_.max_workers(ReadIntVariable(ProcessEnvironment(), "EST_MAX_WORKERS", training_workers, kMaxWorkers)
                             .value_or(training_workers));
  EST_CHECK(options_.max_workers() >= training_workers, ConfigError, "MultiWorkerMirroredStrategy: max_workers (",
            options_.max_workers(), ") is fewer than the ", training_workers, " training workers of ", cluster.source);
  if (devices_.empty()) {
    const int gpus = CudaDeviceCount();
    const std::string device = DeviceOfLocalRank(cluster.local_rank, gpus);
    Log().info("MultiWorkerMirroredStrategy: no devices given: local rank {} takes {} of the {} GPUs on this host",
               cluster.local_rank, device, gpus);
    use_devices({device});
  }
  if (options_.min_workers() > 0 && place_->num_workers > 1) {
    ElasticGroupOptions group;
    group.member = "worker " + std::to_string(place_->worker_index) + ", pid " + std::to_string(::getpid()) + " on " +
                   cluster.task_host();
    group.is_chief = place_->is_chief;
    group.rank = place_->worker_index;
    group.world_size = place_->num_workers;
    group.min_workers = options_.min_workers();
    group.max_workers = options_.max_workers();
    group.beat_lease = beat_lease();
    group.timeout = timeout();
    group.settings = settings();
    GenerationCollectives& collectives = *this;
    elastic_ = std::make_unique<ElasticGroup>(std::move(group), collectives, [this] { collective(); });
  }
}

const ClusterConfig& MultiWorkerMirroredStrategy::cluster() const {
  place();
  EST_CHECK(cluster_.has_value(), ConfigError, "MultiWorkerMirroredStrategy made on a collective has no cluster");
  return *cluster_;
}

MultiWorkerMirroredStrategy::~MultiWorkerMirroredStrategy() = default;

void MultiWorkerMirroredStrategy::check_options() const {
  EST_CHECK(options_.timeout_secs() > 0, ConfigError, "MultiWorkerMirroredStrategy: timeout_secs must be positive, got ",
            options_.timeout_secs());
  EST_CHECK(options_.beat_lease_secs() >= 1 && options_.beat_lease_secs() <= 86400, ConfigError,
            "MultiWorkerMirroredStrategy: beat_lease_secs must be 1 to 86400 (two beats at least; workers beat "
            "every 0.5 s), got ",
            options_.beat_lease_secs());
  EST_CHECK(options_.min_workers() >= 0, ConfigError,
            "MultiWorkerMirroredStrategy: min_workers must be 0 (no in-job recovery) or positive, got ",
            options_.min_workers());
  EST_CHECK(options_.max_workers() >= 0 && options_.max_workers() <= kMaxWorkers, ConfigError,
            "MultiWorkerMirroredStrategy: max_workers must be 0 (the cluster's workers) or 1 to ", kMaxWorkers,
            ", got ", options_.max_workers());
  const GradientCompression compression = options_.buckets().compression();
  EST_CHECK(compression == GradientCompression::kNone || devices_.size() <= 1, ConfigError,
            "MultiWorkerMirroredStrategy: gradient compression ", GradientCompressionName(compression),
            " needs one device per worker (it compresses the bucketed all-reduce), but ", devices_.size(),
            " devices are listed");
  if (compression == GradientCompression::kPowerSgd) options_.buckets().power_sgd().validate();
}

std::shared_ptr<MultiWorkerMirroredStrategy> MultiWorkerMirroredStrategy::Create(MultiWorkerOptions options) {
  return std::make_shared<MultiWorkerMirroredStrategy>(std::move(options));
}

std::shared_ptr<MultiWorkerMirroredStrategy> MultiWorkerMirroredStrategy::CreateWithCollective(
    std::shared_ptr<Collective> collective, std::vector<std::string> devices, BufferSync buffer_sync,
    GradientReducerOptions buckets, std::shared_ptr<Collective> model_collective) {
  return std::shared_ptr<MultiWorkerMirroredStrategy>(new MultiWorkerMirroredStrategy(
      std::move(collective), std::move(devices), buffer_sync, buckets, std::move(model_collective)));
}

StrategySettings MultiWorkerMirroredStrategy::settings() const {
  return {{"local devices", std::to_string(devices_.size())},
          {"communication", backend_->name},
          {"first bucket bytes", std::to_string(options_.buckets().first_bucket_bytes())},
          {"bucket cap bytes", std::to_string(options_.buckets().bucket_cap_bytes())},
          {"gradient compression", CompressionSetting(options_.buckets())},
          {"buffer sync", BufferSyncName(options_.buffer_sync())}};
}

TrainingSync MultiWorkerMirroredStrategy::make_training_sync(const StepSyncOptions& options) {
  return {CreateAllReduceStepSync(*this, options, options_.buckets()),
          CreateReplicaVariables(*this, options_.buffer_sync())};
}

Collective* MultiWorkerMirroredStrategy::collective() {
  if (place().num_workers > 1) std::call_once(connected_, [this] {
      if (collective_ == nullptr) connect();
    });
  return collective_.get();
}

void MultiWorkerMirroredStrategy::connect() {
  const ClusterConfig& cluster = this->cluster();
  const auto [num_workers, worker_index, is_chief] = place();
  const std::chrono::milliseconds timeout = this->timeout();
  const HostPort chief = ParseHostPort(cluster.chief_address, "the chief's address");
  Log().info("MultiWorkerMirroredStrategy: worker {} of {} joining job '{}' at {} ({})", worker_index, num_workers,
             options_.job_id(), cluster.chief_address, cluster.source);
  GrpcStoreOptions store_options;
  store_options.host = chief.host;
  store_options.port = static_cast<uint16_t>(chief.port);
  store_options.job_id = options_.job_id();
  store_options.token = options_.job_token();
  store_options.tls = *options_.tls();
  store_options.timeout = timeout;
  if (is_chief)
    store_ = ServeGrpcStore(store_options);
  else
    store_ = CreateGrpcStore(store_options);
  RendezvousOptions rendezvous;
  rendezvous.job_id = options_.job_id();
  rendezvous.rank = worker_index;
  rendezvous.world_size = num_workers;
  rendezvous.timeout = timeout;
  rendezvous.cluster_source = cluster.source;
  // A worker that finds the group training joins it as a newcomer, without the rendezvous.
  if (elastic_ && elastic_->start(CreatePrefixStore(options_.job_id() + "/training_group", store_))) return;
  job_store_ = Rendezvous(store_, rendezvous);
  // Workers with other settings would train with mismatched buckets or replicas.
  CheckSameSettings(*job_store_, worker_index, num_workers, settings(), timeout);
  collective_store_ = job_store_;
  collective_ = CreateCollective(*backend_, collective_request(job_store_));
  Log().info("MultiWorkerMirroredStrategy: all {} workers connected ({})", num_workers, collective_->name());
  if (elastic_) elastic_->form_first();
}

void MultiWorkerMirroredStrategy::connect_generation(int rank, int world_size, std::shared_ptr<Store> store) {
  place_ = TrainingPlace{world_size, rank, rank == 0};
  collective_store_ = std::move(store);
  if (world_size > 1) collective_ = CreateCollective(*backend_, collective_request(collective_store_));
}

void MultiWorkerMirroredStrategy::close_generation() {
  // model_fn's collective is connected again when model_fn next asks for it, as a newcomer's is.
  {
    const std::lock_guard<std::mutex> lock(model_connect_mutex_);
    model_collective_.reset();
  }
  collective_.reset();
}

void MultiWorkerMirroredStrategy::cut_off_others(const std::vector<int>& ranks) {
  // model_fn's collective, unless it is being connected (then it fails on its own).
  const std::unique_lock<std::mutex> lock(model_connect_mutex_, std::try_to_lock);
  if (lock.owns_lock() && model_collective_) model_collective_->cut_off(ranks);
}

std::chrono::milliseconds MultiWorkerMirroredStrategy::timeout() const {
  return std::chrono::milliseconds(static_cast<int64_t>(options_.timeout_secs() * 1000));
}

std::chrono::milliseconds MultiWorkerMirroredStrategy::beat_lease() const {
  return std::chrono::milliseconds(static_cast<int64_t>(options_.beat_lease_secs() * 1000));
}

CollectiveRequest MultiWorkerMirroredStrategy::collective_request(std::shared_ptr<Store> store) const {
  CollectiveRequest request;
  request.store = std::move(store);
  request.rank = place().worker_index;
  request.world_size = place().num_workers;
  request.device = devices_.front();
  request.hostname = cluster().task_host();
  request.timeout = timeout();
  return request;
}

Collective& MultiWorkerMirroredStrategy::model_collective() {
  EST_CHECK(place().num_workers > 1, ConfigError, "MultiWorkerMirroredStrategy: worker ", place().worker_index,
            " trains alone; model_fn's collectives need no connection");
  const std::lock_guard<std::mutex> lock(model_connect_mutex_);
  if (model_collective_ == nullptr) {
    EST_CHECK(backend_ != nullptr, ConfigError, "MultiWorkerMirroredStrategy was made on a collective without one "
              "for model_fn's collectives: pass CreateWithCollective a model_collective");
    collective();  // the job's rendezvous
    // Small tensors, called while backward may all-reduce gradients on the other connection.
    CollectiveRequest request = collective_request(CreatePrefixStore("model_fn", collective_store_));
    request.shared_memory = false;
    model_collective_ = CreateCollective(*backend_, request);
    Log().info("MultiWorkerMirroredStrategy: model_fn's collectives connected ({})", model_collective_->name());
  }
  return *model_collective_;
}

}  // namespace est::distribute
