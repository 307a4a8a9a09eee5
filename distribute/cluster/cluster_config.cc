#include "distribute/cluster/cluster_config.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <utility>

#include "common/error.h"
#include "distribute/cluster/cluster_address.h"

namespace est::distribute {
namespace {

constexpr const char* kTaskTypesText = "\"chief\", \"worker\", \"ps\", \"evaluator\"";

/// True for the job name of a task type ("" names none).
bool IsTaskType(const std::string& name) { return !name.empty() && ParseTaskType(name).has_value(); }

int TaskCount(const ClusterSpec& cluster, const std::string& job) {
  auto found = cluster.find(job);
  return found == cluster.end() ? 0 : static_cast<int>(found->second.size());
}

/// `"worker": ["a:1", "b:2"]`, to quote a job in a message.
std::string QuoteJob(const std::string& job, const std::vector<std::string>& addresses) {
  std::string text = "\"" + job + "\": [";
  for (size_t i = 0; i < addresses.size(); ++i) text += (i ? ", \"" : "\"") + addresses[i] + "\"";
  return text + "]";
}

std::string QuoteJobNames(const ClusterSpec& cluster) {
  std::string text;
  for (const auto& [job, addresses] : cluster) text += (text.empty() ? "\"" : ", \"") + job + "\"";
  return text;
}

void ValidateJobs(const ClusterSpec& cluster) {
  std::map<std::pair<std::string, int>, std::string> tasks_by_address;  // (lowercase host, port) -> task
  for (const auto& [job, addresses] : cluster) {
    EST_CHECK(IsTaskType(job), ConfigError, "unknown job \"", job, "\" in the cluster; jobs are ", kTaskTypesText);
    EST_CHECK(!addresses.empty(), ConfigError, "job \"", job, "\" in the cluster has no tasks");
    for (size_t i = 0; i < addresses.size(); ++i) {
      if (addresses[i].empty()) continue;
      const std::string task = "job \"" + job + "\" task " + std::to_string(i);
      HostPort parsed = ParseHostPort(addresses[i], task);
      std::transform(parsed.host.begin(), parsed.host.end(), parsed.host.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      auto [first, inserted] = tasks_by_address.try_emplace({parsed.host, parsed.port}, task);
      EST_CHECK(inserted, ConfigError, "address \"", addresses[i], "\" of ", task, " is also the address of ",
                first->second, "; every task needs its own \"host:port\"");
    }
  }
  for (const char* single : {"chief", "evaluator"}) {
    auto found = cluster.find(single);
    EST_CHECK(found == cluster.end() || found->second.size() == 1, ConfigError, "there must be at most one \"", single,
              "\" task, but the cluster has ", QuoteJob(found->first, found->second));
  }
  EST_CHECK(cluster.count("chief") || cluster.count("worker"), ConfigError, "the cluster (jobs ",
            QuoteJobNames(cluster), ") has no training group: it needs a \"chief\" or a \"worker\" job");
}

void ValidateTask(const ClusterSpec& cluster, const std::string& task_type, int task_id) {
  EST_CHECK(!task_type.empty(), ConfigError, "the task type is missing; it is one of ", kTaskTypesText);
  EST_CHECK(IsTaskType(task_type), ConfigError, "unknown task type \"", task_type, "\"; it is one of ", kTaskTypesText);
  EST_CHECK(task_id >= 0, ConfigError, "task index ", task_id, " of task type \"", task_type, "\" is negative");
  auto job = cluster.find(task_type);
  if (job == cluster.end()) {
    EST_CHECK(task_type == "evaluator", ConfigError, "task type \"", task_type, "\" is not a job in the cluster (jobs ",
              QuoteJobNames(cluster), ")");
    return;
  }
  EST_CHECK(task_id < static_cast<int>(job->second.size()), ConfigError, "task index ", task_id,
            " is out of range for job ", QuoteJob(job->first, job->second), ", which has ", job->second.size(),
            job->second.size() == 1 ? " task" : " tasks");
}

/// RunConfig's order: the chief, the other jobs but ps alphabetically, ps last.
int GlobalIdInCluster(const ClusterSpec& cluster, const std::string& task_type, int task_id) {
  if (task_type == "evaluator") return -1;
  std::vector<std::string> order = {"chief"};
  for (const auto& [job, addresses] : cluster) {
    if (job != "chief" && job != "ps") order.push_back(job);
  }
  order.push_back("ps");
  int next = 0;
  for (const auto& job : order) {
    if (job == task_type) return next + task_id;
    next += TaskCount(cluster, job);
  }
  return -1;
}

/// The training group's addresses in rank order: the chief, then the workers.
std::vector<std::string> TrainingAddresses(const ClusterSpec& cluster) {
  std::vector<std::string> addresses;
  for (const char* job : {"chief", "worker"}) {
    auto found = cluster.find(job);
    if (found != cluster.end()) addresses.insert(addresses.end(), found->second.begin(), found->second.end());
  }
  return addresses;
}

int LocalRank(const std::vector<std::string>& training, int rank) {
  if (rank < 0 || training[rank].empty()) return 0;
  const std::string host = ParseHostPort(training[rank], "task").host;
  return static_cast<int>(std::count_if(training.begin(), training.begin() + rank, [&](const std::string& other) {
    return !other.empty() && ParseHostPort(other, "task").host == host;
  }));
}

}  // namespace

const char* TaskTypeName(TaskType type) {
  switch (type) {
    case TaskType::kLocal:
      return "";
    case TaskType::kChief:
      return "chief";
    case TaskType::kWorker:
      return "worker";
    case TaskType::kPs:
      return "ps";
    case TaskType::kEvaluator:
      return "evaluator";
  }
  return "";
}

std::optional<TaskType> ParseTaskType(const std::string& name) {
  for (TaskType type : {TaskType::kLocal, TaskType::kChief, TaskType::kWorker, TaskType::kPs, TaskType::kEvaluator})
    if (name == TaskTypeName(type)) return type;
  return std::nullopt;
}

ClusterConfig MakeClusterConfig(const ClusterSpec& cluster, const std::string& task_type, int task_id,
                                const std::string& source) {
  ClusterConfig config;
  config.source = source;
  if (cluster.empty()) {
    EST_CHECK(task_type.empty(), ConfigError, "task \"", task_type, "\" index ", task_id,
              " needs a cluster, but the cluster is empty");
    return config;
  }
  ValidateJobs(cluster);
  ValidateTask(cluster, task_type, task_id);

  const int num_chiefs = TaskCount(cluster, "chief");
  EST_CHECK(num_chiefs + TaskCount(cluster, "worker") <= kMaxTrainingTasks, ConfigError, "the cluster has ",
            num_chiefs + TaskCount(cluster, "worker"), " training tasks (chief and workers); a job has at most ",
            kMaxTrainingTasks);
  config.cluster = cluster;
  config.task_type = *ParseTaskType(task_type);
  config.task_id = task_id;
  config.num_worker_replicas = num_chiefs + TaskCount(cluster, "worker");
  config.is_chief = task_type == "chief" || (task_type == "worker" && task_id == 0 && num_chiefs == 0);
  config.rank = task_type == "chief" ? 0 : task_type == "worker" ? num_chiefs + task_id : -1;
  config.global_id_in_cluster = GlobalIdInCluster(cluster, task_type, task_id);
  const std::vector<std::string> training = TrainingAddresses(cluster);
  config.chief_address = training.front();
  config.local_rank = LocalRank(training, config.rank);
  auto job = cluster.find(task_type);
  if (job != cluster.end()) config.task_address = job->second[task_id];
  return config;
}

ClusterConfig MakeRankedClusterConfig(int world_size, int rank, int local_rank, const std::string& chief_address,
                                      const std::string& source) {
  EST_CHECK(world_size >= 1 && rank >= 0 && rank < world_size, ConfigError, "rank ", rank, " is not in [0, world size ",
            world_size, ")");
  EST_CHECK(world_size <= kMaxTrainingTasks, ConfigError, "world size ", world_size, " (", source,
            ") exceeds the ", kMaxTrainingTasks, " training tasks a job may have");
  ParseHostPort(chief_address, "the chief");
  std::vector<std::string> workers(world_size);
  workers.front() = chief_address;
  ClusterConfig config = MakeClusterConfig({{"worker", workers}}, "worker", rank, source);
  config.local_rank = local_rank;
  return config;
}

std::string ClusterConfig::task_host() const {
  if (!task_address.empty()) return ParseHostPort(task_address, "task_address").host;
  if (chief_address.empty()) return "127.0.0.1";
  HostPort chief = ParseHostPort(chief_address, "chief_address");
  if (IsLoopbackHost(chief.host)) return chief.host;
  return LocalAddressToward(chief.host, chief.port).value_or("127.0.0.1");
}

namespace {

// "task worker 1 of {"chief": [...], "worker": [...]} (TF_CONFIG)", or "a local run".
std::string DescribeTask(const ClusterConfig& config) {
  if (config.is_local()) return "a local run";
  std::string jobs;
  for (const auto& [job, addresses] : config.cluster) jobs += (jobs.empty() ? "" : ", ") + QuoteJob(job, addresses);
  return Concat("task ", config.job(), " ", config.task_id, " of {", jobs, "} (", config.source, ")");
}

}  // namespace

void CheckSameCluster(const ClusterConfig& own, const ClusterConfig& given, const std::string& what) {
  const bool same = own.cluster == given.cluster && own.task_type == given.task_type && own.task_id == given.task_id;
  EST_CHECK(same, ConfigError, what, " is ", DescribeTask(own), ", but RunConfig::cluster is ", DescribeTask(given),
            "; resolve the cluster once: leave the strategy's cluster unset (the Estimator hands it "
            "RunConfig::cluster) or give both the same ClusterConfig");
}

}  // namespace est::distribute
