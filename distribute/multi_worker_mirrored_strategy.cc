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
#include "distribute/rendezvous/beat_watch.h"
#include "distribute/rendezvous/error_text.h"
#include "distribute/rendezvous/grpc_store.h"
#include "distribute/rendezvous/member_heartbeat.h"
#include "distribute/rendezvous/membership.h"
#include "distribute/rendezvous/rendezvous.h"
#include "distribute/rendezvous/settings_agreement.h"
#include "distribute/rendezvous/store.h"

namespace est::distribute {

// In-job recovery's view of the training group: the generations in the chief's store, and
// the one this worker trains in.
struct MultiWorkerMirroredStrategy::Group {
  Group(std::shared_ptr<Store> group_store, Membership member) : store(std::move(group_store)), membership(member) {}

  std::shared_ptr<Store> store;  ///< the job's training-group keys in the chief's store
  Membership membership;
  Generation generation;
  GroupEntry entry = GroupEntry::kAtStart;
  std::chrono::steady_clock::time_point next_newcomer_check;
  std::optional<BeatWatch> beats;              ///< on the chief: the members' beats, read by the heartbeat's thread
  std::mutex watched_mutex;                    ///< guards the four below, which the heartbeat's thread uses
  Generation watched_generation;               ///< the generation trained in
  std::shared_ptr<Collective> watched;         ///< its collective; null while the group re-forms
  int64_t cut_generation = 0;                  ///< the generation this worker cut ranks off, if any
  std::vector<int> cut_ranks;                  ///< those ranks: lost, when the group re-forms
  std::unique_ptr<MemberHeartbeat> heartbeat;  ///< while this worker trains in the group
};
namespace {

// How often the chief asks its store whether a newcomer waits: a store call every step would
// cost a short step a fraction of its time.
constexpr std::chrono::milliseconds kNewcomerCheckInterval(200);
// The most workers a training group may hold (max_workers).
constexpr int kMaxWorkers = kMaxTrainingTasks;
// How often a member of the training group beats (beat_lease_secs is how long the chief waits
// for one).
constexpr std::chrono::milliseconds kBeatInterval(500);

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
  if (recovers_lost_workers()) {
    const auto group_store = CreatePrefixStore(options_.job_id() + "/training_group", store_);
    MembershipOptions membership;
    membership.member =
        "worker " + std::to_string(worker_index) + ", pid " + std::to_string(::getpid()) + " on " + cluster.task_host();
    membership.coordinator = is_chief;
    membership.min_members = options_.min_workers();
    membership.max_members = options_.max_workers();
    membership.settle = timeout;
    membership.beat_lease = beat_lease();
    membership.beat_interval = kBeatInterval;
    membership.timeout = timeout;
    group_ = std::make_unique<Group>(group_store, Membership(group_store, membership));
    if (is_chief) group_->beats.emplace(group_store, beat_lease(), kBeatInterval);
    start_heartbeat();
    // The first generation closed, so the rendezvous did without this worker: it is new.
    if (!is_chief && group_store->check({"membership/latest"})) {
      join_running_group();
      return;
    }
  }
  job_store_ = Rendezvous(store_, rendezvous);
  // Workers with other settings would train with mismatched buckets or replicas.
  CheckSameSettings(*job_store_, worker_index, num_workers, settings(), timeout);
  collective_store_ = job_store_;
  collective_ = CreateCollective(*backend_, collective_request(job_store_));
  Log().info("MultiWorkerMirroredStrategy: all {} workers connected ({})", num_workers, collective_->name());
  if (group_) form_first_generation();
}

void MultiWorkerMirroredStrategy::form_first_generation() {
  // Before the generation closes: a newcomer that finds it closed finds the settings too.
  if (place().is_chief) PublishGroupSettings(*group_->store, settings());
  group_->generation = group_->membership.JoinFirstAt(place().worker_index, place().num_workers);
  watch_generation(true);
}

void MultiWorkerMirroredStrategy::join_running_group() {
  CheckGroupSettings(*group_->store, settings(), timeout());
  Log().info("MultiWorkerMirroredStrategy: job '{}' is training; worker {} joins its group as a newcomer",
             options_.job_id(), place().worker_index);
  std::optional<Generation> generation = group_->membership.JoinAsNewcomer();
  if (!generation) {
    group_->entry = GroupEntry::kTrainingEnded;
    Log().info("MultiWorkerMirroredStrategy: the training of job '{}' ended before this worker could join",
               options_.job_id());
    return;
  }
  group_->entry = GroupEntry::kJoinedRunning;
  group_->generation = std::move(*generation);
  connect_generation();
  watch_generation(true);
}

bool MultiWorkerMirroredStrategy::recovers_lost_workers() const {
  return options_.min_workers() > 0 && cluster_.has_value() && place().num_workers > 1;
}

bool MultiWorkerMirroredStrategy::regroup() {
  if (!group_) return false;
  std::vector<int> lost = collective_ ? collective_->lost_ranks() : std::vector<int>{};
  {
    // The ranks cut off are lost too, though the failed call names only the first (or, across
    // hosts, a host's leader): the next generation does not wait a lease for the others.
    const std::lock_guard<std::mutex> lock(group_->watched_mutex);
    if (group_->cut_generation == group_->generation.number)
      lost.insert(lost.end(), group_->cut_ranks.begin(), group_->cut_ranks.end());
  }
  std::sort(lost.begin(), lost.end());
  lost.erase(std::unique(lost.begin(), lost.end()), lost.end());
  if (!lost.empty() && lost.front() == 0) {
    Log().error(
        "MultiWorkerMirroredStrategy: the chief was lost, and its store held the training group: the "
        "training ends (est-launch --max-restarts restarts the job from its last checkpoint)");
    return false;
  }
  std::string named;
  for (int rank : lost) named += (named.empty() ? "" : ", ") + std::to_string(rank);
  Log().warn("MultiWorkerMirroredStrategy: generation {} of the training group lost {}; re-forming it without {}",
             group_->generation.number, named.empty() ? "a worker it could not name" : "rank " + named,
             named.empty()      ? "the workers that do not arrive within the timeout"
             : lost.size() == 1 ? "it"
                                : "them");
  form_next_generation(lost);
  return true;
}

void MultiWorkerMirroredStrategy::start_heartbeat() {
  // group_ is destroyed first of the members, and the heartbeat's thread with it.
  if (!group_->heartbeat) group_->heartbeat = std::make_unique<MemberHeartbeat>([this] { beat(); }, kBeatInterval);
}

void MultiWorkerMirroredStrategy::beat() {
  Membership& membership = group_->membership;
  membership.Beat();
  Generation generation;
  std::shared_ptr<Collective> collective;
  {
    const std::lock_guard<std::mutex> lock(group_->watched_mutex);
    if (group_->watched == nullptr) return;
    generation = group_->watched_generation;
    collective = group_->watched;
  }
  // The chief decides whom to cut off; every other member follows it, since a call of its own
  // may wait on the silent rank too.
  std::vector<int> cut;
  if (group_->beats) {
    const std::vector<std::string> others(generation.members.begin() + 1, generation.members.end());
    for (const BeatWatch::Silent& silent : group_->beats->Read(others)) {
      const auto rank = static_cast<int>(
          std::find(generation.members.begin(), generation.members.end(), silent.member) - generation.members.begin());
      Log().warn(
          "MultiWorkerMirroredStrategy: rank {} ('{}') of generation {} has not beaten for {} (its host is gone or cut "
          "off, or it is stopped): cutting it off, so that the group re-forms without it now rather than after "
          "timeout_secs",
          rank, silent.member, generation.number, DescribeDuration(silent.silent_for));
      cut.push_back(rank);
    }
    if (!cut.empty()) membership.CutOff(generation, cut);
  } else {
    cut = membership.CutOffRanks(generation);
    if (!cut.empty())
      Log().warn("MultiWorkerMirroredStrategy: the chief cut off {} of generation {}, silent: so does this worker",
                 DescribeRanks(cut), generation.number);
  }
  if (cut.empty()) return;
  {
    // Once: the generation ends with the call that fails.
    const std::lock_guard<std::mutex> lock(group_->watched_mutex);
    if (group_->watched != collective) return;
    group_->watched.reset();
    group_->cut_generation = generation.number;
    group_->cut_ranks = cut;
  }
  collective->cut_off(cut);
  // model_fn's collective, unless it is being connected (then it fails on its own).
  const std::unique_lock<std::mutex> lock(model_connect_mutex_, std::try_to_lock);
  if (lock.owns_lock() && model_collective_) model_collective_->cut_off(cut);
}

void MultiWorkerMirroredStrategy::watch_generation(bool training) {
  const std::lock_guard<std::mutex> lock(group_->watched_mutex);
  group_->watched_generation = training ? group_->generation : Generation{};
  group_->watched = training ? collective_ : nullptr;
}

MultiWorkerMirroredStrategy::GroupEntry MultiWorkerMirroredStrategy::enter_group() {
  if (!recovers_lost_workers()) return GroupEntry::kAtStart;
  collective();
  start_heartbeat();  // again, for a later training in the same group
  const GroupEntry entry = group_->entry;
  if (entry == GroupEntry::kJoinedRunning) group_->entry = GroupEntry::kAtStart;  // a later run starts with it
  return entry;
}

bool MultiWorkerMirroredStrategy::newcomer_waiting() {
  if (!group_ || !place().is_chief) return false;
  const auto now = std::chrono::steady_clock::now();
  if (now < group_->next_newcomer_check) return false;
  group_->next_newcomer_check = now + kNewcomerCheckInterval;
  return group_->membership.NewcomerWaiting(group_->generation);
}

void MultiWorkerMirroredStrategy::admit_newcomers() {
  EST_ASSERT(group_ != nullptr, "only a strategy with in-job recovery admits newcomers");
  Log().info(
      "MultiWorkerMirroredStrategy: a newcomer waits to join generation {} of the training group: "
      "re-forming it with every member",
      group_->generation.number);
  form_next_generation({});
}

int MultiWorkerMirroredStrategy::max_workers() const {
  return recovers_lost_workers() ? std::max(options_.max_workers(), num_workers()) : num_workers();
}

bool MultiWorkerMirroredStrategy::rejoined_as_newcomer() const { return group_ && group_->generation.newcomer; }

void MultiWorkerMirroredStrategy::end_group() {
  if (!group_) return;
  // The group re-forms no more: a beat to a chief that exits first would only delay this exit.
  group_->heartbeat.reset();
  watch_generation(false);
  if (place().is_chief) group_->membership.Finish(group_->generation);
}

void MultiWorkerMirroredStrategy::form_next_generation(const std::vector<int>& lost) {
  // Closing this worker's connections ends the calls of peers still waiting on it: every
  // worker of a failed generation learns of the loss and re-forms the group too. model_fn's
  // collective is connected again when model_fn next asks for it, as a newcomer's is.
  {
    const std::lock_guard<std::mutex> lock(model_connect_mutex_);
    model_collective_.reset();
  }
  // A second worker may die after the first: the chief stops waiting for it once its process
  // has exited (ranks on this host), rather than after the timeout.
  std::function<std::vector<int>()> lost_later = collective_ ? collective_->lost_ranks_watch() : nullptr;
  watch_generation(false);
  collective_.reset();
  std::vector<int> left_out = lost;
  while (true) {
    group_->generation = group_->membership.Rejoin(group_->generation, left_out, lost_later);
    try {
      connect_generation();
      break;
    } catch (const Error& failure) {
      // A member of the new generation was lost before it connected: the next one forms
      // without the members that do not come back within the settle time.
      if (dynamic_cast<const CommunicationError*>(&failure) == nullptr &&
          dynamic_cast<const TimeoutError*>(&failure) == nullptr)
        throw;
      Log().warn("MultiWorkerMirroredStrategy: connecting generation {} of the training group failed: {}",
                 group_->generation.number, failure.what());
      collective_.reset();
      left_out.clear();
      lost_later = nullptr;
    }
  }
  watch_generation(true);
  Log().warn("MultiWorkerMirroredStrategy: training on as worker {} of {} (generation {})", place_->worker_index,
             place_->num_workers, group_->generation.number);
}

void MultiWorkerMirroredStrategy::connect_generation() {
  const Generation& generation = group_->generation;
  place_ = TrainingPlace{generation.world_size(), generation.rank, generation.rank == 0};
  collective_store_ = CreatePrefixStore("generation/" + std::to_string(generation.number), group_->store);
  if (generation.world_size() > 1) collective_ = CreateCollective(*backend_, collective_request(collective_store_));
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
