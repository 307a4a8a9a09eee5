// PlanJob: the TF_CONFIG cluster of a launch across hosts, from each host's offer; and the
// --rendezvous address.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "apps/est_launch/node_plan.h"
#include "common/error.h"

namespace est_launch_node_plan_test {
namespace {

using est_launch::NodeOffer;
using est_launch::TaskId;
using nlohmann::json;

NodeOffer Offer(int rank, const std::string& host, int first_port, int workers, bool chief = false, int ps = 0,
                bool evaluator = false) {
  NodeOffer offer;
  offer.node_rank = rank;
  offer.layout.host = host;
  offer.layout.workers = workers;
  offer.layout.chief = chief;
  offer.layout.ps = ps;
  offer.layout.evaluator = evaluator;
  offer.first_port = first_port;
  return offer;
}

std::vector<std::string> Labels(const std::vector<TaskId>& tasks) {
  std::vector<std::string> labels;
  for (const TaskId& task : tasks) labels.push_back(task.label());
  return labels;
}

TEST_CASE("PlanJob numbers each job's tasks in node-rank order, on each host's own ports", "[launch]") {
  // Node 0: the chief and 2 workers; node 1: 2 workers, a ps task and the evaluator; node 2: a ps task.
  const auto plan = est_launch::PlanJob({Offer(0, "10.0.0.1", 5000, 2, /*chief=*/true),
                                         Offer(1, "10.0.0.2", 6000, 2, false, 1, /*evaluator=*/true),
                                         Offer(2, "10.0.0.3", 7000, 0, false, 1)});
  CHECK(json(plan.cluster) == json{{"chief", {"10.0.0.1:5000"}},
                             {"worker", {"10.0.0.1:5001", "10.0.0.1:5002", "10.0.0.2:6000", "10.0.0.2:6001"}},
                             {"ps", {"10.0.0.2:6002", "10.0.0.3:7000"}},
                             {"evaluator", {"10.0.0.2:6003"}}});
  REQUIRE(plan.node_tasks.size() == 3);
  CHECK(Labels(plan.node_tasks[0]) == std::vector<std::string>{"chief 0", "worker 0", "worker 1"});
  CHECK(Labels(plan.node_tasks[1]) == std::vector<std::string>{"worker 2", "worker 3", "ps 0", "evaluator 0"});
  CHECK(Labels(plan.node_tasks[2]) == std::vector<std::string>{"ps 1"});
  CHECK(plan.training_tasks == 5);
}

TEST_CASE("PlanJob refuses two chiefs, two evaluators, no trainer and overlapping ports, naming the nodes",
          "[launch]") {
  CHECK_THROWS_WITH(est_launch::PlanJob({Offer(0, "a", 5000, 1, true), Offer(1, "b", 5000, 1, true)}),
                    Catch::Contains("nodes 0 and 1 each have --chief"));
  CHECK_THROWS_WITH(est_launch::PlanJob({Offer(0, "a", 5000, 1, false, 0, true), Offer(1, "b", 5000, 1),
                                         Offer(2, "c", 5000, 1, false, 0, true)}),
                    Catch::Contains("nodes 0 and 2 each have --evaluator"));
  CHECK_THROWS_WITH(est_launch::PlanJob({Offer(0, "a", 5000, 0, false, 1), Offer(1, "b", 5000, 0, false, 0, true)}),
                    Catch::Contains("no node has a worker or a chief"));
  CHECK_THROWS_WITH(est_launch::PlanJob({Offer(0, "127.0.0.1", 5000, 2), Offer(1, "127.0.0.1", 5001, 2)}),
                    Catch::Contains("nodes 0 and 1 both use ports of 127.0.0.1 (5000-5001 and 5001-5002)"));
  CHECK_NOTHROW(est_launch::PlanJob({Offer(0, "127.0.0.1", 5000, 2), Offer(1, "127.0.0.1", 5002, 2)}));
  // Node 0's --min-workers, against the whole job.
  CHECK(est_launch::PlanJob({Offer(0, "a", 5000, 1, true), Offer(1, "b", 5000, 2)}, /*min_workers=*/4).training_tasks ==
        4);
  CHECK_THROWS_WITH(est_launch::PlanJob({Offer(0, "a", 5000, 1, true), Offer(1, "b", 5000, 2)}, 5),
                    Catch::Contains("node 0's --min-workers 5 exceeds the job's 4 training tasks"));
  CHECK_THROWS_WITH(est_launch::PlanJob({Offer(0, "a", 5000, 2), Offer(1, "b", 5000, 1, false, 1)}, 2),
                    Catch::Contains("--min-workers is for all-reduce training, but ps tasks run on node 1"));
  CHECK_THROWS_WITH(est_launch::PlanJob({Offer(0, "a", 5000, 1, true), Offer(1, "b", 5000, 2)}, 2, 3),
                    Catch::Contains("node 0's --max-workers 3 is fewer than the job's 4 training tasks"));
  CHECK_NOTHROW(est_launch::PlanJob({Offer(0, "a", 5000, 1, true), Offer(1, "b", 5000, 2)}, 2, 6));
}

TEST_CASE("PlanJob keys each node's tasks by its rank: a node of --nnodes MIN:MAX may be missing", "[launch]") {
  const auto plan = est_launch::PlanJob({Offer(0, "a", 5000, 1, true), Offer(2, "c", 6000, 2)});
  REQUIRE(plan.node_tasks.size() == 3);
  CHECK(Labels(plan.node_tasks[0]) == std::vector<std::string>{"chief 0", "worker 0"});
  CHECK(plan.node_tasks[1].empty());
  CHECK(Labels(plan.node_tasks[2]) == std::vector<std::string>{"worker 1", "worker 2"});
  CHECK(plan.cluster.at("worker") == std::vector<std::string>{"a:5001", "c:6000", "c:6001"});
}

TEST_CASE("A node joining a running job gets the lowest free worker indices, and brings workers only", "[launch]") {
  est::distribute::ClusterSpec cluster = {{"chief", {"a:5000"}}, {"worker", {"a:5001", "b:6000", "b:6001"}}};
  // Workers 1 and 2 (node 1's) were lost; a new node 1 with 3 workers takes indices 1, 2 and 3.
  const std::vector<TaskId> tasks = est_launch::PlanJoiningNode(Offer(1, "d", 7000, 3), {0}, cluster);
  CHECK(Labels(tasks) == std::vector<std::string>{"worker 1", "worker 2", "worker 3"});
  CHECK(json(cluster) == json::parse(R"({"chief": ["a:5000"], "worker": ["a:5001", "d:7000", "d:7001", "d:7002"]})"));
  // With workers 0, 1 and 3 running, one more takes index 2.
  CHECK(Labels(est_launch::PlanJoiningNode(Offer(2, "e", 8000, 1), {0, 1, 3}, cluster)) ==
        std::vector<std::string>{"worker 2"});
  CHECK(cluster.at("worker")[2] == "e:8000");
  for (const auto& [offer, what] : {std::make_pair(Offer(3, "f", 9000, 1, true), "it has --chief"),
                                    std::make_pair(Offer(3, "f", 9000, 1, false, 1), "it has --ps"),
                                    std::make_pair(Offer(3, "f", 9000, 1, false, 0, true), "it has --evaluator")})
    CHECK_THROWS_WITH(est_launch::PlanJoiningNode(offer, {}, cluster),
                      Catch::Equals(std::string("node 3 joins a running job, which takes workers only (its chief, ps "
                                                "tasks and evaluator run already), but ") +
                                    what));
  CHECK_THROWS_WITH(est_launch::PlanJoiningNode(Offer(3, "f", 9000, 0), {}, cluster),
                    Catch::Contains("node 3 joins a running job without a worker"));
  CHECK(est_launch::DescribeNodeCount(2, 2) == "2");
  CHECK(est_launch::DescribeNodeCount(2, 4) == "2:4");
}

TEST_CASE("--rendezvous is HOST:PORT, an IPv6 address in brackets", "[launch]") {
  CHECK(est_launch::SplitHostPort("10.0.0.1:29400", "--rendezvous") == std::make_pair(std::string("10.0.0.1"), 29400));
  CHECK(est_launch::SplitHostPort("node-0.cluster:1", "--rendezvous") ==
        std::make_pair(std::string("node-0.cluster"), 1));
  CHECK(est_launch::SplitHostPort("[::1]:29400", "--rendezvous") == std::make_pair(std::string("::1"), 29400));
  for (const char* bad :
       {"10.0.0.1", "10.0.0.1:", ":29400", "host:0", "host:65536", "host:29400x", "::1:29400", "host:-1"})
    CHECK_THROWS_WITH(est_launch::SplitHostPort(bad, "--rendezvous"),
                      Catch::Contains(std::string("--rendezvous '") + bad + "' is not HOST:PORT"));
}

}  // namespace
}  // namespace est_launch_node_plan_test
