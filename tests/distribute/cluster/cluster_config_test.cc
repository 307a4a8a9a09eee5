#include "distribute/cluster/cluster_config.h"

#include <arpa/inet.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "tests/test_util.h"

using est::ConfigError;
using est::testing::MessageMatches;
using namespace est::distribute;

namespace {

/// One task of a cluster and every field TensorFlow derives for it.
struct Expected {
  std::string task_type;
  int task_id;
  bool is_chief;
  int global_id_in_cluster;
  int rank;
  int local_rank;
  std::string task_address;
};

void CheckTasks(const ClusterSpec& cluster, int num_worker_replicas, const std::string& chief_address,
                const std::vector<Expected>& tasks) {
  for (const Expected& task : tasks) {
    CAPTURE(task.task_type, task.task_id);
    ClusterConfig config = MakeClusterConfig(cluster, task.task_type, task.task_id, "TF_CONFIG");
    CHECK(config.cluster == cluster);
    CHECK(config.job() == task.task_type);
    CHECK(config.task_id == task.task_id);
    CHECK(config.is_chief == task.is_chief);
    CHECK(config.num_worker_replicas == num_worker_replicas);
    CHECK(config.global_id_in_cluster == task.global_id_in_cluster);
    CHECK(config.rank == task.rank);
    CHECK(config.local_rank == task.local_rank);
    CHECK(config.chief_address == chief_address);
    CHECK(config.task_address == task.task_address);
    CHECK(config.source == "TF_CONFIG");
    CHECK_FALSE(config.is_local());
    CHECK(config.is_evaluator() == (task.task_type == "evaluator"));
  }
}

bool IsIpLiteral(const std::string& host) {
  unsigned char buffer[16];
  return ::inet_pton(AF_INET, host.c_str(), buffer) == 1 || ::inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

}  // namespace

TEST_CASE("MakeClusterConfig derives every field as TensorFlow does", "[distribute]") {
  SECTION("chief, workers and ps: RunConfig's documented example") {
    ClusterSpec cluster = {{"chief", {"host0:2222"}},
                           {"ps", {"host1:2222", "host2:2222"}},
                           {"worker", {"host3:2222", "host4:2222", "host5:2222"}}};
    CheckTasks(cluster, 4, "host0:2222",
               {{"chief", 0, true, 0, 0, 0, "host0:2222"},
                {"worker", 0, false, 1, 1, 0, "host3:2222"},
                {"worker", 1, false, 2, 2, 0, "host4:2222"},
                {"worker", 2, false, 3, 3, 0, "host5:2222"},
                {"ps", 0, false, 4, -1, 0, "host1:2222"},
                {"ps", 1, false, 5, -1, 0, "host2:2222"}});
  }
  SECTION("workers only: worker 0 is the chief; tasks on one host count local ranks") {
    ClusterSpec cluster = {{"worker", {"localhost:12345", "localhost:23456", "other:1"}}};
    CheckTasks(cluster, 3, "localhost:12345",
               {{"worker", 0, true, 0, 0, 0, "localhost:12345"},
                {"worker", 1, false, 1, 1, 1, "localhost:23456"},
                {"worker", 2, false, 2, 2, 0, "other:1"}});
  }
  SECTION("an evaluator sorts before the workers in global ids and is outside the training group") {
    ClusterSpec cluster = {{"chief", {"c:1"}}, {"worker", {"w0:1", "w1:1"}}, {"evaluator", {"e:1"}}, {"ps", {"p:1"}}};
    CheckTasks(cluster, 3, "c:1",
               {{"chief", 0, true, 0, 0, 0, "c:1"},
                {"worker", 0, false, 2, 1, 0, "w0:1"},
                {"worker", 1, false, 3, 2, 0, "w1:1"},
                {"ps", 0, false, 4, -1, 0, "p:1"},
                {"evaluator", 0, false, -1, -1, 0, "e:1"}});
  }
  SECTION("an evaluator may be missing from the cluster, as Estimator's TF_CONFIG allows") {
    CheckTasks({{"worker", {"w0:1", "w1:1"}}}, 2, "w0:1", {{"evaluator", 0, false, -1, -1, 0, ""}});
  }
  SECTION("an empty cluster without a task is a local run") {
    ClusterConfig config = MakeClusterConfig({}, "", 0, "TF_CONFIG");
    CHECK(config.is_local());
    CHECK(config.is_chief);
    CHECK(config.num_worker_replicas == 1);
    CHECK(config.rank == 0);
    CHECK(config.global_id_in_cluster == 0);
    CHECK(config.chief_address.empty());
    CHECK(config.source == "TF_CONFIG");
  }
  SECTION("a default ClusterConfig is a local run") {
    ClusterConfig config;
    CHECK(config.is_local());
    CHECK_FALSE(config.is_evaluator());
    CHECK(config.is_chief);
    CHECK(config.num_worker_replicas == 1);
    CHECK(config.source == "local");
  }
}

TEST_CASE("MakeClusterConfig accepts one host with several ports and repeated unknown addresses", "[distribute]") {
  CHECK(MakeClusterConfig({{"worker", {"h:1", "h:2"}}, {"evaluator", {"h:3"}}}, "worker", 1, "TF_CONFIG").rank == 1);
  CHECK(MakeClusterConfig({{"worker", {"h:1", "", ""}}}, "worker", 2, "torchrun").rank == 2);
}

TEST_CASE("MakeClusterConfig rejects invalid clusters and tasks, quoting them", "[distribute]") {
  struct Case {
    ClusterSpec cluster;
    std::string task_type;
    int task_id;
    std::vector<std::string> quoted;
  };
  const std::vector<Case> cases = {
      {{{"master", {"m:1"}}, {"worker", {"w:1"}}}, "worker", 0, {"job \"master\""}},
      {{{"worker", {}}}, "worker", 0, {"job \"worker\"", "no tasks"}},
      {{{"worker", {"w:1", "bad"}}}, "worker", 0, {"job \"worker\" task 1", "\"bad\""}},
      {{{"chief", {"a:1", "b:1"}}}, "chief", 0, {"\"chief\": [\"a:1\", \"b:1\"]"}},
      {{{"worker", {"w:1"}}, {"evaluator", {"e:1", "f:1"}}}, "evaluator", 0, {"\"evaluator\": [\"e:1\", \"f:1\"]"}},
      {{{"ps", {"p:1"}}}, "ps", 0, {"\"chief\"", "\"worker\"", "\"ps\""}},
      {{{"evaluator", {"e:1"}}}, "evaluator", 0, {"training group", "\"evaluator\""}},
      {{{"worker", {"w:1"}}}, "", 0, {"task type is missing"}},
      {{{"worker", {"w:1"}}}, "master", 0, {"\"master\""}},
      {{{"worker", {"w:1"}}}, "foo", 0, {"\"foo\""}},
      {{{"worker", {"w:1"}}}, "worker", -1, {"-1", "negative"}},
      {{{"worker", {"w:1"}}}, "chief", 0, {"\"chief\"", "not a job"}},
      {{{"worker", {"w:1"}}}, "ps", 0, {"\"ps\"", "not a job"}},
      {{{"worker", {"a:1", "b:1"}}}, "worker", 2, {"task index 2", "\"worker\": [\"a:1\", \"b:1\"]"}},
      {{}, "worker", 0, {"\"worker\"", "empty"}},
      {{{"worker", {"w:1", "w:2", "w:1"}}}, "worker", 0, {"\"w:1\" of job \"worker\" task 2", "task 0"}},
  };
  for (const Case& c : cases) {
    for (const std::string& part : c.quoted) {
      CAPTURE(c.task_type, c.task_id, part);
      CHECK_THROWS_MATCHES(MakeClusterConfig(c.cluster, c.task_type, c.task_id, "TF_CONFIG"), ConfigError,
                           MessageMatches(Catch::Contains(part)));
    }
  }
}

TEST_CASE("MakeRankedClusterConfig and task_host", "[distribute]") {
  SECTION("a training group known by its size and its chief") {
    ClusterConfig chief = MakeRankedClusterConfig(3, 0, 0, "10.0.0.5:29500", "torchrun");
    CHECK(chief.cluster == ClusterSpec{{"worker", {"10.0.0.5:29500", "", ""}}});
    CHECK(chief.task_type == TaskType::kWorker);
    CHECK(chief.is_chief);
    CHECK(chief.rank == 0);
    CHECK(chief.task_address == "10.0.0.5:29500");
    CHECK(chief.source == "torchrun");
    ClusterConfig last = MakeRankedClusterConfig(3, 2, 1, "10.0.0.5:29500", "slurm");
    CHECK(last.task_id == 2);
    CHECK(last.rank == 2);
    CHECK(last.global_id_in_cluster == 2);
    CHECK(last.local_rank == 1);
    CHECK_FALSE(last.is_chief);
    CHECK(last.num_worker_replicas == 3);
    CHECK(last.chief_address == "10.0.0.5:29500");
    CHECK(last.task_address.empty());
    CHECK_THROWS_MATCHES(MakeRankedClusterConfig(2, 2, 0, "a:1", "torchrun"), ConfigError,
                         MessageMatches(Catch::Contains("rank 2") && Catch::Contains("world size 2")));
    CHECK_THROWS_MATCHES(MakeRankedClusterConfig(2, 0, 0, "a", "torchrun"), ConfigError,
                         MessageMatches(Catch::Contains("\"a\"")));
  }
  SECTION("task_host: the task's host, else a loopback chief's, else the route to the chief") {
    CHECK(ClusterConfig().task_host() == "127.0.0.1");
    CHECK(MakeClusterConfig({{"worker", {"localhost:1", "node7:2"}}}, "worker", 1, "TF_CONFIG").task_host() == "node7");
    CHECK(MakeClusterConfig({{"worker", {"[::1]:2222"}}}, "worker", 0, "TF_CONFIG").task_host() == "::1");
    CHECK(MakeRankedClusterConfig(2, 1, 0, "localhost:29500", "torchrun").task_host() == "localhost");
    CHECK(MakeRankedClusterConfig(2, 1, 0, "127.0.0.2:29500", "torchrun").task_host() == "127.0.0.2");
    CHECK(IsIpLiteral(MakeRankedClusterConfig(2, 1, 0, "192.0.2.1:29500", "torchrun").task_host()));
  }
}
