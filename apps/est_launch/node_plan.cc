#include "apps/est_launch/node_plan.h"

#include <map>

#include "common/error.h"

namespace est_launch {
namespace {

// Field `name` of `json`, `what` (a message) naming it when it is missing or of another type.
template <typename T>
T Field(const nlohmann::json& json, const char* name, const char* what) {
  EST_CHECK(json.is_object() && json.contains(name), est::ConfigError, what, " has no '", name, "'");
  try {
    return json.at(name).get<T>();
  } catch (const nlohmann::json::exception&) {
    EST_THROW(est::ConfigError, what, " has a wrong '", name, "': ", json.at(name).dump());
  }
}

constexpr const char* kOffer = "the node's offer";
constexpr const char* kStart = "node 0's start message";

}  // namespace

std::string DescribeNodes(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "node " : "nodes ";
  for (size_t i = 0; i < ranks.size(); ++i)
    text += (i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ") + std::to_string(ranks[i]);
  return text;
}

std::string DescribeNodeCount(int min_nodes, int max_nodes) {
  return min_nodes == max_nodes ? std::to_string(max_nodes)
                                : std::to_string(min_nodes) + ":" + std::to_string(max_nodes);
}

nlohmann::json NodeOffer::to_json() const {
  return {{"node_rank", node_rank},    {"host", layout.host}, {"first_port", first_port},     {"chief", layout.chief},
          {"workers", layout.workers}, {"ps", layout.ps},     {"evaluator", layout.evaluator}};
}

NodeOffer NodeOffer::FromJson(const nlohmann::json& json) {
  NodeOffer offer;
  offer.node_rank = Field<int>(json, "node_rank", kOffer);
  offer.layout.host = Field<std::string>(json, "host", kOffer);
  offer.first_port = Field<int>(json, "first_port", kOffer);
  offer.layout.chief = Field<bool>(json, "chief", kOffer);
  offer.layout.workers = Field<int>(json, "workers", kOffer);
  offer.layout.ps = Field<int>(json, "ps", kOffer);
  offer.layout.evaluator = Field<bool>(json, "evaluator", kOffer);
  EST_CHECK(offer.layout.workers >= 0 && offer.layout.ps >= 0 && offer.layout.num_tasks() <= 65535 &&
                !offer.layout.host.empty(),
            est::ConfigError, "the offer of node ", offer.node_rank, " is not a set of tasks: ", json.dump());
  ValidatePortRange(offer.first_port, offer.layout.num_tasks());
  return offer;
}

nlohmann::json NodeStart::to_json() const {
  nlohmann::json task_list = nlohmann::json::array();
  for (const TaskId& task : tasks) task_list.push_back({task.type, task.index});
  return {{"round", round},
          {"job_id", job_id},
          {"job_token", job_token},
          {"cluster", cluster},
          {"tasks", task_list},
          {"max_restarts", max_restarts},
          {"min_workers", min_workers},
          {"max_workers", max_workers},
          {"restart_backoff_secs", restart_backoff_secs},
          {"max_restart_backoff_secs", max_restart_backoff_secs}};
}

NodeStart NodeStart::FromJson(const nlohmann::json& json) {
  NodeStart start;
  start.round = Field<int>(json, "round", kStart);
  start.job_id = Field<std::string>(json, "job_id", kStart);
  start.job_token = Field<std::string>(json, "job_token", kStart);
  start.cluster = Field<nlohmann::json>(json, "cluster", kStart);
  for (const auto& task : Field<std::vector<std::pair<std::string, int>>>(json, "tasks", kStart))
    start.tasks.push_back({task.first, task.second});
  start.max_restarts = Field<int>(json, "max_restarts", kStart);
  start.min_workers = Field<int>(json, "min_workers", kStart);
  start.max_workers = Field<int>(json, "max_workers", kStart);
  start.restart_backoff_secs = Field<double>(json, "restart_backoff_secs", kStart);
  start.max_restart_backoff_secs = Field<double>(json, "max_restart_backoff_secs", kStart);
  EST_CHECK(start.round >= 0 && start.max_restarts >= 0 && start.min_workers >= 0 && start.max_workers >= 0 &&
                start.restart_backoff_secs >= 0 && start.max_restart_backoff_secs >= 0 && start.cluster.is_object() &&
                !start.tasks.empty(),
            est::ConfigError, kStart, " is not a start of this node's tasks: ", json.dump());
  return start;
}

JobPlan PlanJob(const std::vector<NodeOffer>& offers, int min_workers, int max_workers) {
  std::vector<int> chiefs;
  std::vector<int> evaluators;
  std::vector<int> with_ps;
  int workers = 0;
  for (const NodeOffer& offer : offers) {
    if (offer.layout.chief) chiefs.push_back(offer.node_rank);
    if (offer.layout.evaluator) evaluators.push_back(offer.node_rank);
    if (offer.layout.ps > 0) with_ps.push_back(offer.node_rank);
    workers += offer.layout.workers;
  }
  EST_CHECK(chiefs.size() <= 1, est::ConfigError, DescribeNodes(chiefs),
            " each have --chief; a job has one chief: give --chief to one node only");
  EST_CHECK(evaluators.size() <= 1, est::ConfigError, DescribeNodes(evaluators),
            " each have --evaluator; a job has one evaluator: give --evaluator to one node only");
  EST_CHECK(workers >= 1 || !chiefs.empty(), est::ConfigError,
            "no node has a worker or a chief: give --workers 1 or more (or --chief) to at least one node");
  const int training_tasks = workers + static_cast<int>(chiefs.size());
  if (min_workers > 0) {
    EST_CHECK(with_ps.empty(), est::ConfigError,
              "node 0's --min-workers is for all-reduce training, but ps tasks run on ", DescribeNodes(with_ps),
              " (with ps tasks, --max-restarts restarts a failed task alone)");
    EST_CHECK(min_workers <= training_tasks, est::ConfigError, "node 0's --min-workers ", min_workers,
              " exceeds the job's ", training_tasks, " training tasks (chief and workers, on every node)");
  }
  EST_CHECK(max_workers == 0 || max_workers >= training_tasks, est::ConfigError, "node 0's --max-workers ", max_workers,
            " is fewer than the job's ", training_tasks, " training tasks (chief and workers, on every node)");

  // Hosts that share an address (several est-launch on one machine) need ports apart.
  for (size_t a = 0; a < offers.size(); ++a)
    for (size_t b = a + 1; b < offers.size(); ++b) {
      const NodeOffer& x = offers[a];
      const NodeOffer& y = offers[b];
      const int x_end = x.first_port + x.layout.num_tasks();
      const int y_end = y.first_port + y.layout.num_tasks();
      EST_CHECK(x.layout.host != y.layout.host || x_end <= y.first_port || y_end <= x.first_port, est::ConfigError,
                "nodes ", x.node_rank, " and ", y.node_rank, " both use ports of ", x.layout.host, " (", x.first_port,
                "-", x_end - 1, " and ", y.first_port, "-", y_end - 1,
                "): give each est-launch on one machine its own --port range");
    }

  JobPlan plan;
  plan.training_tasks = training_tasks;
  plan.cluster = nlohmann::json::object();
  plan.node_tasks.resize(offers.empty() ? 0 : static_cast<size_t>(offers.back().node_rank) + 1);
  std::map<std::string, int> next_index;
  // Each job's tasks in node-rank order, so that node 0's workers come first.
  for (const char* job : {"chief", "worker", "ps", "evaluator"}) {
    for (const NodeOffer& offer : offers) {
      int port = offer.first_port;
      for (const TaskId& task : TasksOf(offer.layout)) {
        if (task.type == job) {
          const int index = next_index[job]++;
          plan.cluster[job].push_back(HostPort(offer.layout.host, port));
          plan.node_tasks[static_cast<size_t>(offer.node_rank)].push_back({job, index});
        }
        ++port;
      }
    }
  }
  // Each node's tasks in the order of its ports (chief, workers, ps, evaluator): already so,
  // since the jobs were taken in that order.
  return plan;
}

std::vector<TaskId> PlanJoiningNode(const NodeOffer& offer, const std::set<int>& taken, nlohmann::json& cluster) {
  std::vector<std::string> beyond;
  if (offer.layout.chief) beyond.push_back("--chief");
  if (offer.layout.ps > 0) beyond.push_back("--ps");
  if (offer.layout.evaluator) beyond.push_back("--evaluator");
  EST_CHECK(beyond.empty(), est::ConfigError, "node ", offer.node_rank,
            " joins a running job, which takes workers only (its chief, ps tasks and evaluator run already), but "
            "it has ",
            beyond.front());
  EST_CHECK(offer.layout.workers >= 1, est::ConfigError, "node ", offer.node_rank,
            " joins a running job without a worker: give it --workers 1 or more");
  nlohmann::json& workers = cluster["worker"];
  if (!workers.is_array()) workers = nlohmann::json::array();
  std::vector<TaskId> tasks;
  int index = 0;
  for (int port = offer.first_port; port < offer.first_port + offer.layout.workers; ++port) {
    while (taken.count(index) > 0) ++index;
    const std::string address = HostPort(offer.layout.host, port);
    if (static_cast<size_t>(index) < workers.size())
      workers[static_cast<size_t>(index)] = address;
    else
      workers.push_back(address);
    tasks.push_back({"worker", index++});
  }
  return tasks;
}

}  // namespace est_launch
