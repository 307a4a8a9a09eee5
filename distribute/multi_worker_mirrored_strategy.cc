#include "distribute/multi_worker_mirrored_strategy.h"

#include <algorithm>
#include <cctype>
#include <chrono>

#include "common/config.h"
#include "common/error.h"
#include "common/logging.h"
#include "distribute/cluster/cluster_address.h"
#include "distribute/rendezvous/grpc_store.h"
#include "distribute/rendezvous/rendezvous.h"
#include "distribute/rendezvous/settings_agreement.h"
#include "distribute/rendezvous/store.h"

namespace est::distribute {
namespace {

std::vector<c10::Device> ParseDevices(const std::vector<std::string>& names) {
  EST_CHECK(!names.empty(), ConfigError, "MultiWorkerMirroredStrategy needs at least one device");
  std::vector<c10::Device> devices;
  for (const auto& name : names) devices.push_back(ParseDevice(name));
  return devices;
}

constexpr bool kBuildHasNccl = EST_WITH_NCCL && EST_WITH_CUDA;

// The compression, with PowerSGD's options where they apply: every worker must agree on them.
std::string CompressionSetting(const GradientReducerOptions& buckets) {
  std::string setting = GradientCompressionName(buckets.compression());
  if (buckets.compression() == GradientCompression::kPowerSgd)
    setting += " rank " + std::to_string(buckets.power_sgd().rank()) + ", warm-up " +
               std::to_string(buckets.power_sgd().warmup_steps()) + " steps";
  return setting;
}

}  // namespace

CommunicationImplementation ChooseCommunication(CommunicationImplementation requested,
                                                const std::vector<c10::Device>& devices) {
  const auto not_cuda =
      std::find_if(devices.begin(), devices.end(), [](const c10::Device& device) { return !device.is_cuda(); });
  if (requested == CommunicationImplementation::kAuto) {
    const bool all_cuda = !devices.empty() && not_cuda == devices.end();
    if (all_cuda && !kBuildHasNccl)
      Log().warn("MultiWorkerMirroredStrategy: communication AUTO chose RING (Gloo, through host memory) for CUDA "
                 "devices: this build has no NCCL (EST_WITH_NCCL={}, EST_WITH_CUDA={}; see docs/cuda.md, \"Building "
                 "with CUDA\"). Ask for RING to silence this",
                 EST_WITH_NCCL, EST_WITH_CUDA);
    return all_cuda && kBuildHasNccl ? CommunicationImplementation::kNccl : CommunicationImplementation::kRing;
  }
  if (requested == CommunicationImplementation::kNccl) {
    EST_CHECK(not_cuda == devices.end(), ConfigError, "MultiWorkerMirroredStrategy: communication NCCL needs CUDA ",
              "devices, but device '", not_cuda->str(), "' is not one; list CUDA devices (devices({\"cuda:0\"})) ",
              "or use RING (Gloo)");
    EST_CHECK(kBuildHasNccl, ConfigError, "MultiWorkerMirroredStrategy: communication NCCL is not in this build ",
              "(EST_WITH_NCCL=", EST_WITH_NCCL, ", EST_WITH_CUDA=", EST_WITH_CUDA, "; it needs a CUDA LibTorch, the ",
              "CUDA toolkit and NCCL: see docs/cuda.md, \"Building with CUDA\"); use RING (Gloo)");
  }
  return requested;
}

CommunicationImplementation ParseCommunication(const std::string& name, const std::string& what) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "auto") return CommunicationImplementation::kAuto;
  if (lower == "ring") return CommunicationImplementation::kRing;
  if (lower == "nccl") return CommunicationImplementation::kNccl;
  EST_THROW(ConfigError, what, ": unknown communication '", name, "'; expected auto, ring or nccl");
}

const char* CommunicationName(CommunicationImplementation communication) {
  switch (communication) {
    case CommunicationImplementation::kAuto: return "AUTO";
    case CommunicationImplementation::kRing: return "RING";
    case CommunicationImplementation::kNccl: return "NCCL";
  }
  return "unknown";
}

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(MultiWorkerOptions options)
    : options_(std::move(options)),
      devices_(ParseDevices(options_.devices())),
      communication_(ChooseCommunication(options_.communication(), devices_)) {
  check_options();
  if (options_.cluster()) adopt(*options_.cluster());
}

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(std::shared_ptr<Collective> collective,
                                                         std::vector<std::string> devices, BufferSync buffer_sync,
                                                         GradientReducerOptions buckets)
    : options_(MultiWorkerOptions().buffer_sync(buffer_sync).buckets(buckets)),
      devices_(ParseDevices(devices)),
      collective_(std::move(collective)) {
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
  const GradientCompression compression = options_.buckets().compression();
  EST_CHECK(compression == GradientCompression::kNone || devices_.size() == 1, ConfigError,
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
    GradientReducerOptions buckets) {
  return std::shared_ptr<MultiWorkerMirroredStrategy>(
      new MultiWorkerMirroredStrategy(std::move(collective), std::move(devices), buffer_sync, buckets));
}

StrategySettings MultiWorkerMirroredStrategy::settings() const {
  return {{"local devices", std::to_string(devices_.size())},
          {"communication", CommunicationName(communication_)},
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
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(options_.timeout_secs() * 1000));
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
  const std::shared_ptr<Store> job = Rendezvous(store_, rendezvous);
  // Workers with other settings would train with mismatched buckets or replicas.
  CheckSameSettings(*job, worker_index, num_workers, settings(), timeout);
  if (communication_ == CommunicationImplementation::kNccl) {
    NcclCollectiveOptions nccl;
    nccl.timeout = timeout;
    collective_ = CreateNcclCollective(job, worker_index, num_workers, devices_.front(), nccl);
  } else {
    GlooOptions gloo;
    gloo.hostname = cluster.task_host();
    gloo.timeout = timeout;
    collective_ = CreateGlooCollective(job, worker_index, num_workers, gloo);
  }
  Log().info("MultiWorkerMirroredStrategy: all {} workers connected ({})", num_workers, collective_->name());
}

}  // namespace est::distribute
