#include "apps/est_launch/node_plan.h"

#include "common/error.h"

namespace est_launch {

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
  plan.node_tasks.resize(offers.empty() ? 0 : static_cast<size_t>(offers.back().node_rank) + 1);
  // Each job's tasks in node-rank order, so that node 0's workers come first.
  for (TaskType job : {TaskType::kChief, TaskType::kWorker, TaskType::kPs, TaskType::kEvaluator}) {
    std::vector<std::string>& addresses = plan.cluster[TaskTypeName(job)];
    for (const NodeOffer& offer : offers) {
      int port = offer.first_port;
      for (const TaskId& task : TasksOf(offer.layout)) {
        if (task.type == job) {
          plan.node_tasks[static_cast<size_t>(offer.node_rank)].push_back({job, static_cast<int>(addresses.size())});
          addresses.push_back(JoinHostPort(offer.layout.host, port));
        }
        ++port;
      }
    }
    if (addresses.empty()) plan.cluster.erase(TaskTypeName(job));
  }
  // Each node's tasks in the order of its ports (chief, workers, ps, evaluator): already so,
  // since the jobs were taken in that order.
  return plan;
}

std::vector<TaskId> PlanJoiningNode(const NodeOffer& offer, const std::set<int>& taken,
                                    est::distribute::ClusterSpec& cluster) {
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
  std::vector<std::string>& workers = cluster[TaskTypeName(TaskType::kWorker)];
  std::vector<TaskId> tasks;
  int index = 0;
  for (int port = offer.first_port; port < offer.first_port + offer.layout.workers; ++port) {
    while (taken.count(index) > 0) ++index;
    const std::string address = JoinHostPort(offer.layout.host, port);
    if (static_cast<size_t>(index) < workers.size())
      workers[static_cast<size_t>(index)] = address;
    else
      workers.push_back(address);
    tasks.push_back({TaskType::kWorker, index++});
  }
  return tasks;
}

}  // namespace est_launch
