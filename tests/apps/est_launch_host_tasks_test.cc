// HostTasks: task order, consecutive ports, TF_CONFIG exactly in TensorFlow's format.

#include "apps/est_launch/host_tasks.h"

#include <catch2/catch.hpp>

#include "common/error.h"

using est_launch::ClusterLayout;
using est_launch::HostTasks;
using nlohmann::json;

TEST_CASE("HostTasks lays out chief, workers and evaluator on consecutive ports", "[launch]") {
  SECTION("chief, two workers and an evaluator") {
    ClusterLayout layout;
    layout.workers = 2;
    layout.chief = true;
    layout.evaluator = true;
    HostTasks cluster(layout, 5000);
    REQUIRE(cluster.tasks().size() == 4);
    CHECK(cluster.tasks()[0].label() == "chief 0");
    CHECK(cluster.tasks()[1].label() == "worker 0");
    CHECK(cluster.tasks()[2].label() == "worker 1");
    CHECK(cluster.tasks()[3].label() == "evaluator 0");
    CHECK(cluster.last_port() == 5003);
    const json expected_cluster = {{"chief", {"127.0.0.1:5000"}},
                                   {"worker", {"127.0.0.1:5001", "127.0.0.1:5002"}},
                                   {"evaluator", {"127.0.0.1:5003"}}};
    CHECK(json(cluster.cluster()) == expected_cluster);
    CHECK(json::parse(cluster.tf_config(cluster.tasks()[2])) ==
          json{{"cluster", expected_cluster}, {"task", {{"type", "worker"}, {"index", 1}}}});
    // The library's TF_CONFIG reader places the task where est-launch meant it.
    const est::distribute::ClusterConfig read = est::distribute::ParseTfConfig(cluster.tf_config(cluster.tasks()[2]));
    CHECK(read.task_type == est::distribute::TaskType::kWorker);
    CHECK(read.task_id == 1);
    CHECK(read.rank == 2);
    CHECK(read.task_address == "127.0.0.1:5002");
  }
  SECTION("a chief, a worker, two ps tasks and an evaluator: ps after the workers, evaluator last") {
    ClusterLayout layout;
    layout.workers = 1;
    layout.chief = true;
    layout.ps = 2;
    layout.evaluator = true;
    HostTasks cluster(layout, 6000);
    REQUIRE(cluster.tasks().size() == 5);
    CHECK(cluster.tasks()[2].label() == "ps 0");
    CHECK(cluster.tasks()[3].label() == "ps 1");
    CHECK(cluster.has_ps());
    CHECK(json(cluster.cluster()) == json{{"chief", {"127.0.0.1:6000"}},
                                         {"worker", {"127.0.0.1:6001"}},
                                         {"ps", {"127.0.0.1:6002", "127.0.0.1:6003"}},
                                         {"evaluator", {"127.0.0.1:6004"}}});
    CHECK(json::parse(cluster.tf_config(cluster.tasks()[3]))["task"] == json{{"type", "ps"}, {"index", 1}});
  }
  SECTION("workers only, on an IPv6 host") {
    ClusterLayout layout;
    layout.workers = 2;
    layout.host = "::1";
    HostTasks cluster(layout, 7000);
    CHECK(json(cluster.cluster()) == json{{"worker", {"[::1]:7000", "[::1]:7001"}}});
    CHECK(json::parse(cluster.tf_config(cluster.tasks()[0]))["task"] == json{{"type", "worker"}, {"index", 0}});
  }
  SECTION("a chief alone") {
    ClusterLayout layout;
    layout.workers = 0;
    layout.chief = true;
    CHECK(json(HostTasks(layout, 9000).cluster()) == json{{"chief", {"127.0.0.1:9000"}}});
  }
  SECTION("invalid sizes and port ranges are rejected") {
    ClusterLayout layout;
    layout.workers = 0;
    CHECK_THROWS_AS(HostTasks(layout, 5000), est::ConfigError);
    layout.workers = -1;
    layout.chief = true;
    CHECK_THROWS_AS(HostTasks(layout, 5000), est::ConfigError);
    layout.workers = 1;
    CHECK_THROWS_AS(HostTasks(layout, 65535), est::ConfigError);
    CHECK_THROWS_AS(HostTasks(layout, 0), est::ConfigError);
    CHECK(HostTasks(layout, 65534).last_port() == 65535);
  }
}
