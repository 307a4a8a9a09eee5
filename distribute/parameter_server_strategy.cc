#include "distribute/parameter_server_strategy.h"

#include <chrono>

#include "common/error.h"
#include "common/logging.h"
#include "common/stop_signals.h"
#include "distribute/cluster/cluster_address.h"
#include "distribute/parameter_server/ps_connection.h"
#include "distribute/parameter_server/variable_server.h"
#include "distribute/parameter_server_step_sync.h"

namespace est::distribute {
namespace {

std::chrono::milliseconds Milliseconds(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

}  // namespace

const char* ParameterServerModeName(ParameterServerMode mode) {
  switch (mode) {
    case ParameterServerMode::kAsync: return "async";
    case ParameterServerMode::kBoundedStaleness: return "bounded";
    case ParameterServerMode::kSync: return "sync";
  }
  return "unknown";
}

ParameterServerMode ParseParameterServerMode(const std::string& name) {
  for (auto mode : {ParameterServerMode::kAsync, ParameterServerMode::kBoundedStaleness, ParameterServerMode::kSync})
    if (name == ParameterServerModeName(mode)) return mode;
  EST_THROW(ConfigError, "parameter-server mode '", name, "': expected async, bounded or sync");
}

ParameterServerStrategy::ParameterServerStrategy(ParameterServerOptions options)
    : options_(std::move(options)), device_(ParseDevice(options_.device())) {
  EST_CHECK(options_.timeout_secs() > 0, ConfigError, "ParameterServerStrategy: timeout_secs must be positive, got ",
            options_.timeout_secs());
  EST_CHECK(options_.staleness() >= 0, ConfigError, "ParameterServerStrategy: staleness must be >= 0, got ",
            options_.staleness());
  if (options_.cluster()) adopt(*options_.cluster());
}

void ParameterServerStrategy::configure(const ClusterConfig& cluster) {
  if (cluster_)
    CheckSameCluster(*cluster_, cluster, "the cluster of ParameterServerOptions");
  else
    adopt(cluster);
}

void ParameterServerStrategy::adopt(const ClusterConfig& cluster) {
  const auto ps = cluster.cluster.find(TaskTypeName(TaskType::kPs));
  EST_CHECK(!cluster.is_local() && ps != cluster.cluster.end(), ConfigError, "ParameterServerStrategy: ",
            cluster.is_local() ? std::string("no cluster is configured")
                               : cluster.source + " has no 'ps' job",
            "; it needs ps tasks (TF_CONFIG {\"cluster\": {\"chief\": [...], \"worker\": [...], \"ps\": [...]}}, or "
            "est-launch --ps N)");
  for (size_t task = 0; task < ps->second.size(); ++task)
    EST_CHECK(!ps->second[task].empty(), ConfigError, "ParameterServerStrategy: ", cluster.source,
              " does not give the address of ps task ", task, "; every ps task's host:port must be known");
  const int workers = cluster.num_worker_replicas;
  if (options_.total_num_replicas() == 0) options_.total_num_replicas(workers);
  if (options_.replicas_to_aggregate() == 0) options_.replicas_to_aggregate(options_.total_num_replicas());
  EST_CHECK(options_.total_num_replicas() == workers, ConfigError, "ParameterServerStrategy: total_num_replicas is ",
            options_.total_num_replicas(), " but the cluster has ", workers,
            " training tasks (chief and workers); every training task pushes each step");
  EST_CHECK(options_.replicas_to_aggregate() >= 1 && options_.replicas_to_aggregate() <= workers, ConfigError,
            "ParameterServerStrategy: replicas_to_aggregate is ", options_.replicas_to_aggregate(),
            ", expected 1 to ", workers, " (the training tasks; those beyond it are backup workers)");
  cluster_ = cluster;
  place_ = PlaceInTraining(cluster);
  if (options_.job_id().empty()) options_.job_id(DefaultJobId(cluster.chief_address));
  if (options_.job_token().empty()) options_.job_token(JobTokenFromEnvironment());
  if (!options_.tls()) options_.tls(StoreTlsFromEnvironment());
  options_.placement().num_ps(static_cast<int>(ps->second.size()));
}

const ClusterConfig& ParameterServerStrategy::cluster() const {
  place();
  return *cluster_;
}

ParameterServerStrategy::~ParameterServerStrategy() = default;

std::shared_ptr<ParameterServerStrategy> ParameterServerStrategy::Create(ParameterServerOptions options) {
  return std::make_shared<ParameterServerStrategy>(std::move(options));
}

int ParameterServerStrategy::num_replicas_in_sync() const {
  const bool trains = !cluster().is_evaluator() && !cluster().is_ps();
  return trains && options_.mode() == ParameterServerMode::kSync ? options_.replicas_to_aggregate() : 1;
}

TrainingSync ParameterServerStrategy::make_training_sync(const StepSyncOptions& options) {
  const ClusterConfig& cluster = this->cluster();
  const TrainingPlace place = this->place();
  if (!connection_) {
    PsConnectionOptions connection;
    for (const auto& address : cluster.cluster.at("ps")) {
      const HostPort task = ParseHostPort(address, "a ps task's address");
      connection.tasks.emplace_back(task.host, static_cast<uint16_t>(task.port));
    }
    connection.job_id = options_.job_id();
    connection.token = options_.job_token();
    connection.tls = *options_.tls();
    connection.timeout = Milliseconds(options_.timeout_secs());
    connection.placement = options_.placement();
    connection.worker = static_cast<uint32_t>(place.worker_index);
    connection.rule.set_mode(options_.mode() == ParameterServerMode::kSync               ? ps::UpdateRule::SYNC
                             : options_.mode() == ParameterServerMode::kBoundedStaleness ? ps::UpdateRule::BOUNDED
                                                                                          : ps::UpdateRule::ASYNC);
    connection.rule.set_staleness(options_.staleness());
    connection.rule.set_replicas_to_aggregate(options_.replicas_to_aggregate());
    connection.rule.set_num_workers(cluster.num_worker_replicas);
    // Half the call timeout: a step that waits for a dead worker still answers within it.
    connection.rule.set_liveness_ms(static_cast<int64_t>(options_.timeout_secs() * 500));
    connection.rule.set_fused_optimizer_step(options.fused_optimizer_step);
    connection_ = std::make_shared<PsConnection>(std::move(connection));
    Log().info("ParameterServerStrategy: worker {} of {} ({} mode) with {} ps task(s), job '{}'", place.worker_index,
               place.num_workers, ParameterServerModeName(options_.mode()), connection_->num_ps(), options_.job_id());
  }
  return CreateParameterServerSync(connection_, place.is_chief, options);
}

void ParameterServerStrategy::serve() {
  const ClusterConfig& cluster = this->cluster();
  EST_CHECK(cluster.is_ps(), ConfigError, "ParameterServerStrategy::serve runs a ps task; this task is ",
            cluster.is_local() ? std::string("a local run") : "'" + cluster.job() + "'");
  const HostPort address = ParseHostPort(cluster.task_address, "this ps task's address");
  VariableServiceOptions service;
  service.task = cluster.task_id;
  service.host = address.host;
  service.port = static_cast<uint16_t>(address.port);
  service.job_id = options_.job_id();
  service.token = options_.job_token();
  service.tls = *options_.tls();
  service.timeout = Milliseconds(options_.timeout_secs());
  auto server = VariableServer::Start(service);
  Log().info("ps task {} serving job '{}' at {}", cluster.task_id, options_.job_id(), cluster.task_address);
  const auto started = std::chrono::steady_clock::now();
  while (!server->wait_finished(std::chrono::milliseconds(100))) {
    if (const int signal_number = StopSignalGuard::pending())
      throw Interrupted(est::Concat("ps task ", cluster.task_id, " stopped by ", StopSignalName(signal_number)),
                        signal_number);
    // Variables come from the chief as soon as it starts: a ps task that never gets them
    // would otherwise wait for ever.
    EST_CHECK(server->initialized() ||
                  std::chrono::steady_clock::now() - started < std::chrono::duration<double>(options_.timeout_secs()),
              TimeoutError, "ps task ", cluster.task_id, " of job '", options_.job_id(), "' at ",
              cluster.task_address, ": the chief did not give it the job's variables within ",
              options_.timeout_secs(), " s (ParameterServerOptions.timeout_secs, est-train --timeout-secs): no "
              "training task of this job reached it; check that the chief runs, with the same cluster and job id");
  }
  Log().info("ps task {}: the chief finished the job; exiting", cluster.task_id);
}

}  // namespace est::distribute
