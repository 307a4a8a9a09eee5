#include "apps/est_launch/node_plan.h"

#include <map>

#include "common/error.h"

namespace est_launch {
namespace {

template <typename T>
T Field(const nlohmann::json& json, const char* name) {
  EST_CHECK(json.is_object() && json.contains(name), est::ConfigError, "the node's offer has no '", name, "'");
  try {
    return json.at(name).get<T>();
  } catch (const nlohmann::json::exception&) {
    EST_THROW(est::ConfigError, "the node's offer has a wrong '", name, "': ", json.at(name).dump());
  }
}

}  // namespace

std::string DescribeNodes(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "node " : "nodes ";
  for (size_t i = 0; i < ranks.size(); ++i)
    text += (i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ") + std::to_string(ranks[i]);
  return text;
}

nlohmann::json NodeOffer::to_json() const {
  return {{"node_rank", node_rank},    {"host", layout.host}, {"first_port", first_port},     {"chief", layout.chief},
          {"workers", layout.workers}, {"ps", layout.ps},     {"evaluator", layout.evaluator}};
}

NodeOffer NodeOffer::FromJson(const nlohmann::json& json) {
  NodeOffer offer;
  offer.node_rank = Field<int>(json, "node_rank");
  offer.layout.host = Field<std::string>(json, "host");
  offer.first_port = Field<int>(json, "first_port");
  offer.layout.chief = Field<bool>(json, "chief");
  offer.layout.workers = Field<int>(json, "workers");
  offer.layout.ps = Field<int>(json, "ps");
  offer.layout.evaluator = Field<bool>(json, "evaluator");
  EST_CHECK(offer.layout.workers >= 0 && offer.layout.ps >= 0 && offer.layout.num_tasks() <= 65535 &&
                !offer.layout.host.empty(),
            est::ConfigError, "the offer of node ", offer.node_rank, " is not a set of tasks: ", json.dump());
  ValidatePortRange(offer.first_port, offer.layout.num_tasks());
  return offer;
}

JobPlan PlanJob(const std::vector<NodeOffer>& offers) {
  std::vector<int> chiefs;
  std::vector<int> evaluators;
  int workers = 0;
  for (const NodeOffer& offer : offers) {
    if (offer.layout.chief) chiefs.push_back(offer.node_rank);
    if (offer.layout.evaluator) evaluators.push_back(offer.node_rank);
    workers += offer.layout.workers;
  }
  EST_CHECK(chiefs.size() <= 1, est::ConfigError, DescribeNodes(chiefs),
            " each have --chief; a job has one chief: give --chief to one node only");
  EST_CHECK(evaluators.size() <= 1, est::ConfigError, DescribeNodes(evaluators),
            " each have --evaluator; a job has one evaluator: give --evaluator to one node only");
  EST_CHECK(workers >= 1 || !chiefs.empty(), est::ConfigError,
            "no node has a worker or a chief: give --workers 1 or more (or --chief) to at least one node");

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
  plan.cluster = nlohmann::json::object();
  plan.node_tasks.resize(offers.size());
  std::map<std::string, int> next_index;
  // Each job's tasks in node-rank order, so that node 0's workers come first.
  for (const char* job : {"chief", "worker", "ps", "evaluator"}) {
    for (size_t node = 0; node < offers.size(); ++node) {
      const NodeOffer& offer = offers[node];
      int port = offer.first_port;
      for (const TaskId& task : TasksOf(offer.layout)) {
        if (task.type == job) {
          const int index = next_index[job]++;
          plan.cluster[job].push_back(HostPort(offer.layout.host, port));
          plan.node_tasks[node].push_back({job, index});
        }
        ++port;
      }
    }
  }
  // Each node's tasks in the order of its ports (chief, workers, ps, evaluator): already so,
  // since the jobs were taken in that order.
  return plan;
}

}  // namespace est_launch
