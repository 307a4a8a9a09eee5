#include <string>
#include <vector>

#include "common/error.h"
#include "distribute/cluster/cluster_config.h"
#include "tests/test_util.h"

using est::ConfigError;
using est::testing::MessageMatches;
using namespace est::distribute;

TEST_CASE("ParseTfConfig derives the issue's examples as TensorFlow does", "[distribute]") {
  const std::string workers = R"("cluster": {"worker": ["localhost:12345", "localhost:23456"]})";
  SECTION("worker 0 of a cluster without a chief is the chief") {
    ClusterConfig config = ParseTfConfig("{" + workers + R"(, "task": {"type": "worker", "index": 0}})");
    CHECK(config.cluster == ClusterSpec{{"worker", {"localhost:12345", "localhost:23456"}}});
    CHECK(config.task_type == TaskType::kWorker);
    CHECK(config.task_id == 0);
    CHECK(config.is_chief);
    CHECK(config.num_worker_replicas == 2);
    CHECK(config.rank == 0);
    CHECK(config.global_id_in_cluster == 0);
    CHECK(config.chief_address == "localhost:12345");
    CHECK(config.task_address == "localhost:12345");
    CHECK(config.source == "TF_CONFIG");
    CHECK(config.task_host() == "localhost");
  }
  SECTION("worker 1") {
    ClusterConfig config = ParseTfConfig("{" + workers + R"(, "task": {"type": "worker", "index": 1}})");
    CHECK_FALSE(config.is_chief);
    CHECK(config.rank == 1);
    CHECK(config.local_rank == 1);
    CHECK(config.num_worker_replicas == 2);
    CHECK(config.chief_address == "localhost:12345");
    CHECK(config.task_address == "localhost:23456");
  }
  SECTION("the evaluator is outside the training group") {
    ClusterConfig config = ParseTfConfig(
        R"({"cluster": {"worker": ["localhost:12345", "localhost:23456"], "evaluator": ["localhost:34567"]},
            "task": {"type": "evaluator", "index": 0}})");
    CHECK(config.is_evaluator());
    CHECK_FALSE(config.is_local());
    CHECK_FALSE(config.is_chief);
    CHECK(config.rank == -1);
    CHECK(config.num_worker_replicas == 2);
    CHECK(config.chief_address == "localhost:12345");
    CHECK(config.task_address == "localhost:34567");
  }
  SECTION("chief, workers and ps, with the keys TensorFlow ignores here") {
    ClusterConfig config = ParseTfConfig(
        R"({"cluster": {"chief": ["host0:2222"], "ps": ["host1:2222", "host2:2222"],
                        "worker": ["host3:2222", "host4:2222", "host5:2222"]},
            "task": {"type": "worker", "index": 1}, "rpc_layer": "grpc", "environment": "cloud"})");
    CHECK(config.task_address == "host4:2222");
    CHECK(config.num_worker_replicas == 4);
    CHECK(config.rank == 2);
    CHECK(config.global_id_in_cluster == 2);
    CHECK_FALSE(config.is_chief);
  }
}

TEST_CASE("ParseTfConfig reads local runs and the forms TensorFlow accepts", "[distribute]") {
  for (const std::string local :
       {"{}", R"({"cluster": {}})", R"({"cluster": null, "task": null})", R"({"task": {}, "rpc_layer": "grpc"})"}) {
    CAPTURE(local);
    ClusterConfig config = ParseTfConfig(local);
    CHECK(config.is_local());
    CHECK(config.is_chief);
    CHECK(config.num_worker_replicas == 1);
    CHECK(config.source == "TF_CONFIG");
  }
  const std::string cluster = R"("cluster": {"worker": ["a:1", "b:1", "c:1"]})";
  CHECK(ParseTfConfig("{" + cluster + R"(, "task": {"type": "worker", "index": "2"}})").task_id == 2);
  CHECK(ParseTfConfig("{" + cluster + R"(, "task": {"type": "worker", "index": 1.0}})").task_id == 1);
  ClusterConfig evaluator = ParseTfConfig("{" + cluster + R"(, "task": {"type": "evaluator", "index": 0}})");
  CHECK(evaluator.is_evaluator());
  CHECK(evaluator.task_address.empty());
  CHECK(evaluator.chief_address == "a:1");
  CHECK(
      ParseTfConfig(R"({"cluster": {"worker": ["[::1]:2222"]}, "task": {"type": "worker", "index": 0}})").task_host() ==
      "::1");
}

TEST_CASE("ParseTfConfig rejects every malformed TF_CONFIG, quoting the offending part", "[distribute]") {
  struct Case {
    std::string tf_config;
    std::vector<std::string> quoted;
  };
  const std::string task = R"("task": {"type": "worker", "index": 0})";
  const std::vector<Case> cases = {
      // TensorFlow's own checks.
      {R"({"cluster": {"chief": ["a:1", "b:2"], "worker": ["w:1"]}, "task": {"type": "chief", "index": 0}})",
       {"\"chief\": [\"a:1\", \"b:2\"]", "at most one"}},
      {R"({"cluster": {"ps": ["p:1"]}, "task": {"type": "ps", "index": 0}})", {"\"chief\"", "training group"}},
      {R"({"cluster": {"evaluator": ["e:1"]}, "task": {"type": "evaluator", "index": 0}})",
       {"\"evaluator\"", "training group"}},
      {R"({"cluster": {"worker": ["w:1"]}, "task": {"index": 0}})", {"no \"type\"", R"({"index":0})"}},
      {R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "", "index": 0}})", {"no \"type\""}},
      {R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "worker"}})", {"no \"index\"", R"({"type":"worker"})"}},
      {R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "master", "index": 0}})", {"\"master\""}},
      {R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "foo", "index": 0}})", {"\"foo\""}},
      {R"({"cluster": {"master": ["m:1"], "worker": ["w:1"]}, )" + task + "}", {"job \"master\""}},
      {R"({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 2}})",
       {"task index 2", "\"worker\": [\"a:1\", \"b:1\"]"}},
      {R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "worker", "index": -1}})", {"index -1", "negative"}},
      {R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "ps", "index": 0}})", {"\"ps\"", "not a job"}},
      {R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "chief", "index": 0}})", {"\"chief\"", "not a job"}},
      {R"({"cluster": {"worker": ["w:1"], "evaluator": ["e:1", "f:1"]}, "task": {"type": "evaluator", "index": 1}})",
       {"\"evaluator\": [\"e:1\", \"f:1\"]"}},
      // JSON and types.
      {R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "worker" "index": 0}})",
       {"not valid JSON", "parse error", R"("worker" "index")"}},
      {"", {"not valid JSON"}},
      {R"(["w:1"])", {R"(["w:1"])"}},
      {R"({"cluster": ["w:1"], )" + task + "}", {"\"cluster\"", R"(["w:1"])"}},
      {R"({"cluster": {"worker": "w:1"}, )" + task + "}", {"job \"worker\"", R"("w:1")"}},
      {R"({"cluster": {"worker": ["w:1", 5]}, )" + task + "}", {"job \"worker\" task 1", "got 5"}},
      {R"({"cluster": {"worker": ["w:1", null]}, )" + task + "}", {"job \"worker\" task 1", "got null"}},
      {R"({"cluster": {"worker": []}, )" + task + "}", {"job \"worker\"", "no tasks"}},
      {R"({"cluster": {"worker": ["w:1"]}, "task": "worker"})", {"\"task\"", R"("worker")"}},
      {R"({"cluster": {"worker": ["w:1"]}, "task": {"type": 1, "index": 0}})", {"\"type\"", "got 1"}},
      {R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "worker", "index": "one"}})", {"\"index\"", R"("one")"}},
      {R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "worker", "index": 0.5}})", {"\"index\"", "0.5"}},
      {R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "worker", "index": true}})", {"\"index\"", "true"}},
      {R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "worker", "index": 1e12}})", {"\"index\""}},
      // Found by tf_config_fuzzer: a number beyond double's range escaped as nlohmann's out_of_range.
      {R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "worker", "index": 1e400}})",
       {"not valid JSON", "number overflow", "1e400"}},
      // Nested past any copy's stack (65 400 deep; 20 000 under ulimit -s 1024): refused at the parse.
      {R"({"cluster": {"worker": ["w:1"]}, "task": {"type": "worker", "index": 0}, "x": )" +
           std::string(65400, '[') + std::string(65400, ']') + "}",
       {"not valid JSON", "nested deeper than 100 arrays and objects"}},
      // Addresses.
      {R"({"cluster": {"worker": ["localhost"]}, )" + task + "}", {"job \"worker\" task 0", "\"localhost\""}},
      {R"({"cluster": {"worker": ["w:1", "w:http"]}, )" + task + "}", {"job \"worker\" task 1", "\"w:http\""}},
      {R"({"cluster": {"worker": ["w:0"]}, )" + task + "}", {"\"w:0\""}},
      {R"({"cluster": {"worker": ["w:65536"]}, )" + task + "}", {"\"w:65536\""}},
      {R"({"cluster": {"worker": [":2222"]}, )" + task + "}", {"\":2222\""}},
      {R"({"cluster": {"worker": [""]}, )" + task + "}", {"job \"worker\" task 0", "\"\""}},
      {R"({"cluster": {"worker": ["::1:2222"]}, )" + task + "}", {"\"::1:2222\"", "IPv6"}},
      // Our additions: every task has its own address.
      {R"({"cluster": {"worker": ["w:1", "w:1"]}, )" + task + "}",
       {"\"w:1\" of job \"worker\" task 1", "job \"worker\" task 0", "its own"}},
      {R"({"cluster": {"chief": ["Host:7"], "worker": ["host:7"]}, )" + task + "}",
       {"\"host:7\" of job \"worker\" task 0", "job \"chief\" task 0"}},
      {R"({"cluster": {"worker": ["w:1"], "evaluator": ["w:1"]}, "task": {"type": "evaluator", "index": 0}})",
       {"job \"evaluator\" task 0", "job \"worker\" task 0"}},
      // Our additions: a task needs a cluster, a cluster needs a task.
      {"{" + task + "}", {"\"worker\"", "cluster is empty"}},
      {R"({"cluster": {}, )" + task + "}", {"\"worker\"", "cluster is empty"}},
      {R"({"cluster": {"worker": ["w:1"]}})", {"no \"task\""}},
  };
  for (const Case& c : cases) {
    for (const std::string& part : c.quoted) {
      CAPTURE(c.tf_config, part);
      CHECK_THROWS_MATCHES(ParseTfConfig(c.tf_config), ConfigError,
                           MessageMatches(Catch::StartsWith("invalid TF_CONFIG: ") && Catch::Contains(part)));
    }
  }
}
