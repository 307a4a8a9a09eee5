// est-launch across hosts (--nnodes, --node-rank, --rendezvous), with its hosts on loopback:
// the joined TF_CONFIG cluster, stops that reach every host, restarts of the whole job, a
// host's est-launch killed and started again, and the rendezvous' errors. (With est-train on
// simulated hosts: tests/apps/est_launch_hosts_test.py.)

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "apps/est_launch/node_channel.h"
#include "apps/est_launch/node_messages.h"
#include "apps/est_launch/port_finder.h"
#include "tests/apps/est_launch_runner.h"
#include "tests/test_util.h"

namespace est_launch_nodes_test {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using est::testing::ByTask;
using est::testing::Contains;
using est::testing::Finish;
using est::testing::Launch;
using est::testing::LaunchRun;
using est::testing::Lines;
using est::testing::ReadFile;
using est::testing::ScopedEnv;
using est::testing::Start;
using nlohmann::json;


// Free ports on loopback: the rendezvous, then each node's first port, `per_node` apart.
struct Ports {
  int rendezvous;
  int first;
  int per_node;

  std::string rendezvous_address() const { return "127.0.0.1:" + std::to_string(rendezvous); }
  std::string node(int rank) const { return std::to_string(first + rank * per_node); }
};

Ports FreePorts(int nodes, int per_node) {
  const int first = est_launch::FindFreePortRange("127.0.0.1", 1 + nodes * per_node);
  return {first, first + 1, per_node};
}

// The flags of node `rank` of `nnodes`, then its own flags and the command.
std::vector<std::string> NodeArgs(const Ports& ports, int nnodes, int rank, std::vector<std::string> rest) {
  std::vector<std::string> args{"--nnodes",     std::to_string(nnodes),
                                "--node-rank",  std::to_string(rank),
                                "--rendezvous", ports.rendezvous_address(),
                                "--port",       ports.node(rank),
                                "--cpu-bind",   "none"};
  args.insert(args.end(), rest.begin(), rest.end());
  return args;
}

// Starts node `rank` with its output in a fresh directory.
Launch StartNode(const Ports& ports, int nnodes, int rank, const std::vector<std::string>& rest,
                 const std::string& name) {
  return Start(NodeArgs(ports, nnodes, rank, rest), est::testing::FreshTempDir(name + "_node" + std::to_string(rank)));
}

// Waits up to 20 s for `part` in est-launch's stderr (`file` "err") or stdout ("out").
bool WaitForOutput(const Launch& launch, const std::string& part, const char* file = "err") {
  for (auto deadline = Clock::now() + std::chrono::seconds(20); Clock::now() < deadline;) {
    if (Contains(ReadFile(launch.dir / file), part)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// Runs node r with `node_flags[r]` for every r, all at once, each to its end.
std::vector<LaunchRun> RunNodes(const Ports& ports, const std::vector<std::vector<std::string>>& node_flags,
                                const std::string& name) {
  const int nnodes = static_cast<int>(node_flags.size());
  std::vector<Launch> launches;
  for (int rank = 0; rank < nnodes; ++rank) launches.push_back(StartNode(ports, nnodes, rank, node_flags[rank], name));
  std::vector<LaunchRun> runs;
  for (const Launch& launch : launches) runs.push_back(Finish(launch));
  return runs;
}

TEST_CASE("est-launch across hosts gives every task of every host the whole job's TF_CONFIG", "[launch]") {
  ScopedEnv no_token("EST_JOB_TOKEN", nullptr);
  const Ports ports = FreePorts(2, 3);
  const std::string script = R"(echo "$TF_CONFIG"; echo "job=$EST_JOB_ID token=$EST_JOB_TOKEN")";
  // Node 0: the chief and a worker; node 1: two workers and the evaluator.
  const auto runs = RunNodes(ports,
                             {{"--chief", "--workers", "1", "--", "sh", "-c", script},
                              {"--workers", "2", "--evaluator", "--", "sh", "-c", script}},
                             "nodes_config");
  const LaunchRun& run0 = runs[0];
  const LaunchRun& run1 = runs[1];
  INFO(run0.err << run0.out << run1.err << run1.out);
  REQUIRE(run0.exit_code == 0);
  REQUIRE(run1.exit_code == 0);
  const auto at = [&](int rank, int offset) { return "127.0.0.1:" + std::to_string(ports.first + rank * 3 + offset); };
  const json cluster = {{"chief", {at(0, 0)}}, {"worker", {at(0, 1), at(1, 0), at(1, 1)}}, {"evaluator", {at(1, 2)}}};
  auto tasks = ByTask(run0.out);
  for (const auto& [label, lines] : ByTask(run1.out)) tasks[label] = lines;
  REQUIRE(tasks.size() == 5);
  CHECK(ByTask(run0.out).count("chief 0") == 1);
  CHECK(ByTask(run0.out).count("worker 0") == 1);
  CHECK(ByTask(run1.out).count("worker 2") == 1);
  CHECK(ByTask(run1.out).count("evaluator 0") == 1);
  std::set<std::string> job_lines;
  for (const auto& [label, lines] : tasks) {
    INFO(label);
    REQUIRE(lines.size() == 2);
    const json config = json::parse(lines[0]);
    CHECK(config["cluster"] == cluster);
    CHECK(config["task"]["type"].get<std::string>() + " " + std::to_string(config["task"]["index"].get<int>()) ==
          label);
    job_lines.insert(lines[1]);
  }
  // One job id and one token (node 0's random one) on both hosts.
  REQUIRE(job_lines.size() == 1);
  CHECK(std::regex_match(*job_lines.begin(), std::regex("job=[0-9a-f]{16} token=[0-9a-f]{32}")));
  CHECK(Contains(run0.err, "est-launch: node 1 joined from 127.0.0.1:"));
  CHECK(Contains(run0.err, "est-launch: node 0 of 2: starting 2 task(s) on 127.0.0.1 ports " + ports.node(0) + "-"));
  CHECK(Contains(run1.err, "est-launch: node 1 of 2: starting 3 task(s) on 127.0.0.1 ports " + ports.node(1) + "-"));
}

TEST_CASE("A failure on one host stops the tasks on every host, and --max-restarts restarts them all", "[launch]") {
  ScopedEnv no_token("EST_JOB_TOKEN", nullptr);
  const fs::path marks = est::testing::FreshTempDir("nodes_failure_marks");
  const std::string m = marks.string() + "/";
  // Every task says which start this is and leaves a mark; worker 1 (node 1) fails on the first
  // start once worker 0 (node 0) has left its mark, and worker 0 sleeps until stopped.
  const std::string script = R"(echo "task=$EST_TASK restart=$EST_RESTART_COUNT"; touch )" + m +
                             R"($EST_TASK-$EST_RESTART_COUNT; )"
                             R"(if [ "$EST_RESTART_COUNT" = 0 ]; then if [ "$EST_TASK" = worker-1 ]; then )"
                             R"(while [ ! -e )" +
                             m + R"(worker-0-0 ]; do sleep 0.01; done; exit 3; fi; sleep 60 & wait; fi)";
  SECTION("without restarts: both est-launch fail, naming the task") {
    const Ports ports = FreePorts(2, 1);
    const auto runs =
        RunNodes(ports, {{"--workers", "1", "--", "sh", "-c", script}, {"--workers", "1", "--", "sh", "-c", script}},
                 "nodes_failure");
    const LaunchRun& run0 = runs[0];
    const LaunchRun& run1 = runs[1];
    INFO(run0.err << run0.out << run1.err << run1.out);
    CHECK(run0.exit_code == 1);
    CHECK(run1.exit_code == 1);
    CHECK(run0.seconds < 10);  // worker 0's sleep 60 was stopped
    CHECK(Contains(run0.err, "est-launch: node 1: worker 1 exited with status 3; stopping this host's tasks"));
    CHECK(Lines(run0.err).back() == "est-launch: error: the job failed: node 1: worker 1 exited with status 3");
    CHECK(Lines(run1.err).back() == "est-launch: error: the job failed: node 1: worker 1 exited with status 3");
  }
  SECTION("with --max-restarts on node 0: every host starts its tasks again, after the backoff") {
    const Ports ports = FreePorts(2, 1);
    const auto runs =
        RunNodes(ports,
                 {{"--workers", "1", "--max-restarts", "2", "--restart-backoff-secs", "0.5", "--", "sh", "-c", script},
                  {"--workers", "1", "--", "sh", "-c", script}},
                 "nodes_restart");
    const LaunchRun& run0 = runs[0];
    const LaunchRun& run1 = runs[1];
    INFO(run0.err << run0.out << run1.err << run1.out);
    CHECK(run0.exit_code == 0);
    CHECK(run1.exit_code == 0);
    CHECK(ByTask(run0.out).at("worker 0") ==
          std::vector<std::string>{"task=worker-0 restart=0", "task=worker-0 restart=1"});
    CHECK(ByTask(run1.out).at("worker 1") ==
          std::vector<std::string>{"task=worker-1 restart=0", "task=worker-1 restart=1"});
    CHECK(Contains(run0.err,
                   "est-launch: node 1: worker 1 exited with status 3; restarting the job on every host in "
                   "0.5 s (restart 1 of at most 2), once every node has joined again"));
    CHECK(Contains(run1.err,
                   "est-launch: node 1: node 0 restarts the job (node 1: worker 1 exited with status 3); "
                   "joining again"));
    CHECK_FALSE(Contains(run0.err + run1.err, "error:"));
  }
}

TEST_CASE("Across hosts, node 0's --min-workers counts the training tasks of every host", "[launch]") {
  ScopedEnv no_token("EST_JOB_TOKEN", nullptr);
  // Node 0 runs the chief and worker 0, node 1 worker 1. Every task prints EST_MIN_WORKERS and
  // leaves a mark; worker 1 exits with 3 once all 3 have, the others print again a second later
  // unless they were stopped.
  const auto run_nodes = [](const std::string& min_workers, const std::string& name) {
    const std::string m = est::testing::FreshTempDir(name + "_marks").string() + "/";
    const std::string script =
        R"sh(echo "min=$EST_MIN_WORKERS"; touch )sh" + m +
        R"sh($EST_TASK; if [ "$EST_TASK" = worker-1 ]; then while [ "$(ls )sh" + m +
        R"sh( | wc -l)" -lt 3 ]; do sleep 0.01; done; exit 3; fi; sleep 1; echo "still running")sh";
    return RunNodes(FreePorts(2, 2),
                    {{"--chief", "--workers", "1", "--min-workers", min_workers, "--", "sh", "-c", script},
                     {"--workers", "1", "--", "sh", "-c", script}},
                    name);
  };
  SECTION("a worker lost on node 1 while enough are left: every host's others run on, and both exit 0") {
    const auto runs = run_nodes("2", "nodes_min_workers");
    const LaunchRun& run0 = runs[0];
    const LaunchRun& run1 = runs[1];
    INFO(run0.err << run0.out << run1.err << run1.out);
    CHECK(run0.exit_code == 0);
    CHECK(run1.exit_code == 0);
    CHECK(Contains(run1.err,
                   "est-launch: worker 1 exited with status 3; the job's other training tasks train on without it "
                   "while --min-workers 2 are left (node 0 counts them on every host)"));
    CHECK(Contains(run0.err,
                   "est-launch: node 1's worker 1 is lost; the job's 2 other training tasks train on without it "
                   "(--min-workers 2)"));
    CHECK(ByTask(run0.out).at("chief 0") == std::vector<std::string>{"min=2", "still running"});
    CHECK(ByTask(run0.out).at("worker 0") == std::vector<std::string>{"min=2", "still running"});
    CHECK(ByTask(run1.out).at("worker 1") == std::vector<std::string>{"min=2"});  // node 0's policy reached node 1
    CHECK_FALSE(Contains(run0.err + run1.err, "error:"));
  }
  SECTION("too few would be left: node 0 stops every host") {
    const auto runs = run_nodes("3", "nodes_min_few");
    const LaunchRun& run0 = runs[0];
    const LaunchRun& run1 = runs[1];
    INFO(run0.err << run0.out << run1.err << run1.out);
    CHECK(run0.exit_code == 1);
    CHECK(run1.exit_code == 1);
    const std::string why =
        "node 1's worker 1 is lost, and the job's 2 training tasks left are fewer than --min-workers 3";
    CHECK(Contains(run0.err, "est-launch: " + why + "; stopping this host's tasks"));
    CHECK(Lines(run0.err).back() == "est-launch: error: the job failed: " + why);
    CHECK(Lines(run1.err).back() == "est-launch: error: the job failed: " + why);
    CHECK_FALSE(Contains(run0.out, "still running"));
  }
  SECTION("more than the job's training tasks, or given to another node: refused before anything starts") {
    const Ports ports = FreePorts(2, 2);
    const auto runs = RunNodes(
        ports, {{"--chief", "--workers", "1", "--min-workers", "4", "--", "true"}, {"--workers", "1", "--", "true"}},
        "nodes_min_many");
    INFO(runs[0].err << runs[1].err);
    CHECK(runs[0].exit_code == 2);
    CHECK(runs[1].exit_code == 2);
    const std::string why =
        "node 0's --min-workers 4 exceeds the job's 3 training tasks (chief and workers, on every node)";
    CHECK(Lines(runs[0].err).back() == "est-launch: error: " + why);
    CHECK(Lines(runs[1].err).back() == "est-launch: error: node 0 refused to start the job: " + why);
    const LaunchRun other = Finish(Start(NodeArgs(ports, 2, 1, {"--workers", "1", "--min-workers", "1", "--", "true"}),
                                         est::testing::FreshTempDir("nodes_min_other")));
    CHECK(other.exit_code == 2);
    CHECK(Contains(other.err,
                   "est-launch: error: --min-workers is node 0's: across hosts, node 0's --min-workers and "
                   "--max-restarts are the job's recovery policy"));
  }
}

TEST_CASE("When one host's est-launch dies, the other hosts stop; with restarts, its new est-launch rejoins",
          "[launch]") {
  ScopedEnv no_token("EST_JOB_TOKEN", nullptr);
  // The first start sleeps until stopped (exec: the sleep itself gets SIGHUP when its
  // est-launch dies); a restart ends at once.
  const std::string script =
      R"(echo "task=$EST_TASK restart=$EST_RESTART_COUNT"; if [ "$EST_RESTART_COUNT" = 0 ]; then exec sleep 60; fi)";
  const Ports ports = FreePorts(2, 1);
  const bool restarts = GENERATE(false, true);
  std::vector<std::string> node0_flags{"--workers", "1", "--restart-backoff-secs", "0"};
  if (restarts) node0_flags.insert(node0_flags.end(), {"--max-restarts", "1"});
  node0_flags.insert(node0_flags.end(), {"--", "sh", "-c", script});
  const Launch node0 = StartNode(ports, 2, 0, node0_flags, "nodes_killed");
  const Launch node1 = StartNode(ports, 2, 1, {"--workers", "1", "--", "sh", "-c", script}, "nodes_killed");
  REQUIRE(WaitForOutput(node1, "[worker 1] task=worker-1 restart=0", "out"));
  REQUIRE(WaitForOutput(node0, "[worker 0] task=worker-0 restart=0", "out"));
  ::kill(node1.pid, SIGKILL);
  int status = 0;
  ::waitpid(node1.pid, &status, 0);
  const auto killed = Clock::now();
  if (!restarts) {
    const LaunchRun run0 = Finish(node0);
    INFO(run0.err << run0.out);
    CHECK(run0.exit_code == 1);
    CHECK(Clock::now() - killed < std::chrono::seconds(5));
    CHECK(Contains(run0.err, "est-launch: node 1's est-launch (127.0.0.1:"));
    CHECK(Contains(run0.err, ") is gone: the connection closed; stopping this host's tasks"));
    return;
  }
  REQUIRE(WaitForOutput(node0, "once every node has joined again"));
  const Launch again = StartNode(ports, 2, 1, {"--workers", "1", "--", "sh", "-c", script}, "nodes_rejoined");
  const LaunchRun run0 = Finish(node0);
  const LaunchRun run1 = Finish(again);
  INFO(run0.err << run0.out << run1.err << run1.out);
  CHECK(run0.exit_code == 0);
  CHECK(run1.exit_code == 0);
  CHECK(ByTask(run0.out).at("worker 0") ==
        std::vector<std::string>{"task=worker-0 restart=0", "task=worker-0 restart=1"});
  CHECK(ByTask(run1.out).at("worker 1") == std::vector<std::string>{"task=worker-1 restart=1"});
}

TEST_CASE("With --min-workers, a host's est-launch killed takes its workers with it, and the other hosts run on",
          "[launch]") {
  ScopedEnv no_token("EST_JOB_TOKEN", nullptr);
  // Node 0 runs the chief and worker 0, node 1 workers 1 and 2 (each prints its pid, then
  // becomes a sleep of 60 s). Node 0's tasks run until the test leaves a mark, then say so.
  const std::string marks = est::testing::FreshTempDir("nodes_host_lost_marks").string();
  const std::string script = R"(echo "pid=$$"; if [ "$EST_TASK" = worker-1 ] || [ "$EST_TASK" = worker-2 ]; then )"
                             R"(exec sleep 60; fi; while [ ! -e )" +
                             marks + R"(/go ]; do sleep 0.02; done; echo "still running")";
  const std::string min_workers = GENERATE("2", "3");
  const Ports ports = FreePorts(2, 2);
  const Launch node0 = StartNode(
      ports, 2, 0, {"--chief", "--workers", "1", "--min-workers", min_workers, "--", "sh", "-c", script}, "nodes_lost");
  const Launch node1 = StartNode(ports, 2, 1, {"--workers", "2", "--", "sh", "-c", script}, "nodes_lost");
  for (const char* task : {"[worker 1] pid=", "[worker 2] pid="}) REQUIRE(WaitForOutput(node1, task, "out"));
  REQUIRE(WaitForOutput(node0, "[worker 0] pid=", "out"));
  std::vector<pid_t> node1_tasks;
  for (const auto& [task, lines] : ByTask(ReadFile(node1.dir / "out"))) node1_tasks.push_back(std::stoi(lines[0].substr(4)));
  REQUIRE(node1_tasks.size() == 2);
  ::kill(node1.pid, SIGKILL);
  int status = 0;
  ::waitpid(node1.pid, &status, 0);
  // Its workers die with it (SIGKILL, not the SIGHUP that stops a task after a checkpoint).
  const auto gone = [](pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string pid_field, name, state;
    return !(stat >> pid_field >> name >> state) || state == "Z";
  };
  for (pid_t pid : node1_tasks) {
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (!gone(pid) && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(gone(pid));
  }
  const std::string lost = ") is gone: the connection closed; ";
  if (min_workers == "2") {
    REQUIRE(WaitForOutput(node0, lost));
    // A new est-launch in node 1's place joins the running job: its worker takes index 1, the
    // lowest that no running worker holds.
    const std::string waits =
        R"sh(echo "index=$(echo "$TF_CONFIG" | sed 's/.*"index":\([0-9]*\).*/\1/')"; while [ ! -e )sh" + marks +
        R"(/go ]; do sleep 0.02; done)";
    const Launch again = StartNode(ports, 2, 1, {"--workers", "1", "--", "sh", "-c", waits}, "nodes_lost_again");
    REQUIRE(WaitForOutput(again, "[worker 1] index=1", "out"));
    std::ofstream(marks + "/go").put('\n');
    const LaunchRun run1 = Finish(again);
    const LaunchRun run0 = Finish(node0);
    INFO(run0.err << run0.out << run1.err << run1.out);
    CHECK(run1.exit_code == 0);
    CHECK(Contains(run0.err, "est-launch: node 1 joined the running job from 127.0.0.1:"));
    CHECK(Contains(run0.err, ": worker 1 join the training group, which has 3 training tasks with them"));
    CHECK(run0.exit_code == 0);
    CHECK(Contains(run0.err, "est-launch: node 1's est-launch (127.0.0.1:"));
    CHECK(Contains(run0.err, lost + "its 2 worker(s) are lost, and the job's 2 other training tasks train on without "
                                    "them (--min-workers 2)"));
    CHECK(ByTask(run0.out).at("chief 0").back() == "still running");
    CHECK(ByTask(run0.out).at("worker 0").back() == "still running");
    CHECK_FALSE(Contains(run0.err, "error:"));
  } else {
    const LaunchRun run0 = Finish(node0);
    INFO(run0.err << run0.out);
    CHECK(run0.exit_code == 1);
    CHECK(Contains(run0.err, lost + "with its 2 worker(s) lost, the job's 2 training tasks left are fewer than "
                                    "--min-workers 3; stopping this host's tasks"));
    CHECK_FALSE(Contains(run0.out, "still running"));
  }
}

TEST_CASE("--nnodes MIN:MAX: under --min-workers, a node joins the running job while the group has room", "[launch]") {
  ScopedEnv no_token("EST_JOB_TOKEN", nullptr);
  // Nodes 0 and 1 start the job (a chief and 2 workers; node 0's --max-workers 4). Node 2 may
  // come later: with an evaluator it is refused, with 3 workers it does not fit, with 1 worker
  // it joins. Every task prints its TF_CONFIG and runs until the test leaves a mark.
  const std::string marks = est::testing::FreshTempDir("nodes_join_marks").string();
  const std::string script = R"(echo "config=$TF_CONFIG min=$EST_MIN_WORKERS max=$EST_MAX_WORKERS"; while [ ! -e )" +
                             marks + R"(/go ]; do sleep 0.02; done)";
  const Ports ports = FreePorts(3, 3);
  const auto node_args = [&](int rank, std::vector<std::string> rest) {
    std::vector<std::string> args = NodeArgs(ports, 3, rank, rest);
    args[1] = "2:3";
    return args;
  };
  const Launch node0 = Start(
      node_args(0, {"--chief", "--workers", "1", "--min-workers", "2", "--max-workers", "4", "--", "sh", "-c", script}),
      est::testing::FreshTempDir("nodes_join_node0"));
  const Launch node1 =
      Start(node_args(1, {"--workers", "1", "--", "sh", "-c", script}), est::testing::FreshTempDir("nodes_join_node1"));
  REQUIRE(WaitForOutput(node1, "[worker 1] config=", "out"));
  REQUIRE(WaitForOutput(node0, "[worker 0] config=", "out"));
  const LaunchRun evaluator = Finish(Start(node_args(2, {"--workers", "1", "--evaluator", "--", "true"}),
                                           est::testing::FreshTempDir("nodes_join_evaluator")));
  CHECK(evaluator.exit_code == 2);
  CHECK(Lines(evaluator.err).back() ==
        "est-launch: error: node 0 refused to start the job: node 2 joins a running job, which takes workers only (its "
        "chief, ps tasks and evaluator run already), but it has --evaluator");
  const LaunchRun too_many =
      Finish(Start(node_args(2, {"--workers", "3", "--", "true"}), est::testing::FreshTempDir("nodes_join_too_many")));
  CHECK(too_many.exit_code == 2);
  CHECK(Contains(too_many.err,
                 "the job runs 3 training tasks of its most 4 (node 0's --max-workers): the 3 worker(s) "
                 "of node 2 do not fit"));
  const Launch node2 =
      Start(node_args(2, {"--workers", "1", "--", "sh", "-c", script}), est::testing::FreshTempDir("nodes_join_node2"));
  REQUIRE(WaitForOutput(node2, "[worker 2] config=", "out"));
  std::ofstream(marks + "/go").put('\n');
  const LaunchRun run2 = Finish(node2);
  const LaunchRun run1 = Finish(node1);
  const LaunchRun run0 = Finish(node0);
  INFO(run0.err << run0.out << run1.err << run1.out << run2.err << run2.out);
  CHECK(run0.exit_code == 0);
  CHECK(run1.exit_code == 0);
  CHECK(run2.exit_code == 0);
  CHECK(Contains(run0.err, "est-launch: node 2 joined the running job from 127.0.0.1:"));
  CHECK(Contains(run0.err, ": worker 2 join the training group, which has 4 training tasks with them"));
  // Its TF_CONFIG: the job's cluster with its own address as worker 2, and node 0's policy.
  const std::string line = ByTask(run2.out).at("worker 2").front();
  const json config = json::parse(line.substr(7, line.find(" min=") - 7));
  CHECK(config["task"] == json::parse(R"({"type": "worker", "index": 2})"));
  CHECK(config["cluster"]["worker"].size() == 3);
  CHECK(config["cluster"]["worker"][2] == "127.0.0.1:" + ports.node(2));
  CHECK(config["cluster"]["chief"][0] == "127.0.0.1:" + ports.node(0));
  CHECK(Contains(line, " min=2 max=4"));
  CHECK_FALSE(Contains(run0.err + run1.err + run2.err, "est-launch: error"));
}

TEST_CASE("A signal to one host's est-launch stops the job on every host, without a restart", "[launch]") {
  ScopedEnv no_token("EST_JOB_TOKEN", nullptr);
  const std::string script = R"(echo started; sleep 60 & wait)";
  const Ports ports = FreePorts(2, 1);
  const Launch node0 =
      StartNode(ports, 2, 0, {"--workers", "1", "--max-restarts", "3", "--", "sh", "-c", script}, "nodes_signal");
  const Launch node1 = StartNode(ports, 2, 1, {"--workers", "1", "--", "sh", "-c", script}, "nodes_signal");
  REQUIRE(WaitForOutput(node1, "starting 1 task(s)"));
  REQUIRE(WaitForOutput(node0, "starting 1 task(s)"));
  ::kill(node1.pid, SIGTERM);
  const LaunchRun run0 = Finish(node0);
  const LaunchRun run1 = Finish(node1);
  INFO(run0.err << run0.out << run1.err << run1.out);
  CHECK(run1.exit_code == 128 + SIGTERM);
  CHECK(run0.exit_code == 1);
  CHECK(Contains(run0.err, "est-launch: node 1: est-launch caught SIGTERM; stopping this host's tasks"));
  CHECK_FALSE(Contains(run0.err, "restarting"));
}

TEST_CASE("SIGUSR1 to one host's est-launch reaches the tasks of every host, and stops nothing", "[launch]") {
  ScopedEnv no_token("EST_JOB_TOKEN", nullptr);
  const fs::path dir = est::testing::FreshTempDir("nodes_sigusr1");
  // Each task catches SIGUSR1 as a training TorchEstimator program does, and runs until told to end.
  const std::string script = R"(trap 'echo caught-usr1' USR1; echo started; )"
                             R"(while [ ! -e "$1/done" ]; do sleep 0.05; done)";
  const Ports ports = FreePorts(3, 1);
  std::vector<Launch> nodes;
  for (int rank = 0; rank < 3; ++rank)
    nodes.push_back(
        StartNode(ports, 3, rank, {"--workers", "1", "--", "sh", "-c", script, "sh", dir.string()}, "nodes_sigusr1"));
  for (const Launch& node : nodes) REQUIRE(WaitForOutput(node, "] started", "out"));
  ::kill(nodes[1].pid, SIGUSR1);  // a node that is not node 0: through node 0 to node 2
  bool all_caught = true;
  for (const Launch& node : nodes) all_caught = WaitForOutput(node, "] caught-usr1", "out") && all_caught;
  std::ofstream(dir / "done").put('\n');
  std::vector<LaunchRun> runs;
  for (const Launch& node : nodes) runs.push_back(Finish(node));
  INFO(runs[0].err << runs[0].out << runs[1].err << runs[1].out << runs[2].err << runs[2].out);
  CHECK(all_caught);
  for (const LaunchRun& run : runs) CHECK(run.exit_code == 0);
  CHECK(Contains(runs[1].out, "[worker 1] caught-usr1\n"));
  CHECK(Contains(runs[1].err, "est-launch: caught SIGUSR1; forwarded it to worker 1 (each logs its flight recorders)"));
  CHECK(Contains(runs[0].out, "[worker 0] caught-usr1\n"));
  CHECK(Contains(runs[0].err, "est-launch: another host caught SIGUSR1; forwarded it to worker 0 (each logs"));
  CHECK(Contains(runs[2].out, "[worker 2] caught-usr1\n"));
  CHECK(Contains(runs[2].err, "est-launch: another host caught SIGUSR1; forwarded it to worker 2 (each logs"));
}

TEST_CASE("The rendezvous names the node that never joins, and refuses one that does not fit", "[launch]") {
  const std::string script = "echo ran";
  SECTION("a node that never joins") {
    ScopedEnv no_token("EST_JOB_TOKEN", nullptr);
    const Ports ports = FreePorts(3, 1);
    const std::vector<std::string> rest{"--workers", "1", "--rendezvous-timeout-secs", "2", "--", "sh", "-c", script};
    // Node 2 of 3 never starts.
    const Launch node0 = StartNode(ports, 3, 0, rest, "nodes_missing");
    const Launch node1 = StartNode(ports, 3, 1, rest, "nodes_missing");
    const LaunchRun run0 = Finish(node0);
    const LaunchRun run1 = Finish(node1);
    INFO(run0.err << run1.err);
    CHECK(run0.exit_code == 1);
    CHECK(run1.exit_code == 1);
    const std::string why =
        "node 2 of 3 did not join at " + ports.rendezvous_address() + " within 2 s (--rendezvous-timeout-secs)";
    CHECK(Lines(run0.err).back() == "est-launch: error: " + why);
    CHECK(Lines(run1.err).back() == "est-launch: error: node 0 refused to start the job: " + why);
    CHECK(run0.out.empty());
  }
  SECTION("no node 0") {
    const Ports ports = FreePorts(2, 1);
    const LaunchRun run1 =
        Finish(StartNode(ports, 2, 1, {"--workers", "1", "--rendezvous-timeout-secs", "1", "--", "sh", "-c", script},
                         "nodes_no_leader"));
    INFO(run1.err);
    CHECK(run1.exit_code == 1);
    CHECK(Lines(run1.err).back() == "est-launch: error: node 0 did not answer at " + ports.rendezvous_address() +
                                        " within 1 s (--rendezvous-timeout-secs)");
  }
  SECTION("a node with another --nnodes, a node rank taken, a wrong token") {
    ScopedEnv token("EST_JOB_TOKEN", "secret-of-this-job");
    const Ports ports = FreePorts(2, 1);
    const Launch node0 = StartNode(
        ports, 2, 0, {"--workers", "1", "--rendezvous-timeout-secs", "30", "--", "sh", "-c", script}, "nodes_refused");
    const LaunchRun other_size = Finish(Start({"--nnodes", "3", "--node-rank", "1", "--rendezvous",
                                               ports.rendezvous_address(), "--workers", "1", "--", "true"},
                                              est::testing::FreshTempDir("nodes_refused_size")));
    CHECK(other_size.exit_code == 2);
    CHECK(Lines(other_size.err).back() ==
          "est-launch: error: node 0 refused to start the job: it has --nnodes 3, node 0 has --nnodes 2");
    {
      ScopedEnv wrong("EST_JOB_TOKEN", "guess");
      const LaunchRun wrong_token =
          Finish(StartNode(ports, 2, 1, {"--workers", "1", "--", "true"}, "nodes_refused_token"));
      CHECK(wrong_token.exit_code == 2);
      CHECK(Contains(wrong_token.err, "its EST_JOB_TOKEN is missing or differs from node 0's"));
    }
    const Launch node1 = StartNode(ports, 2, 1, {"--workers", "1", "--", "sh", "-c", "sleep 1"}, "nodes_refused");
    REQUIRE(WaitForOutput(node1, "starting 1 task(s)"));
    // While the job runs, a second node 1 (a --node-rank given twice) is refused at once, while
    // the first trains on.
    const LaunchRun twice = Finish(StartNode(ports, 2, 1, {"--workers", "1", "--", "true"}, "nodes_refused_twice"));
    INFO(twice.err);
    CHECK(twice.exit_code == 2);
    CHECK(Contains(twice.err, "node 0 refused to start the job: node 1 has joined already, from 127.0.0.1:"));
    CHECK(Contains(twice.err, "give each host its own --node-rank"));
    const LaunchRun run0 = Finish(node0);
    const LaunchRun run1 = Finish(node1);
    INFO(run0.err << run1.err);
    CHECK(run0.exit_code == 0);
    CHECK(run1.exit_code == 0);
    CHECK(Contains(run0.err, "est-launch: refused 127.0.0.1:"));
    CHECK(Contains(run0.err, ": it has --nnodes 3, node 0 has --nnodes 2"));
  }
  SECTION("two chiefs") {
    ScopedEnv no_token("EST_JOB_TOKEN", nullptr);
    const Ports ports = FreePorts(2, 1);
    const auto runs =
        RunNodes(ports, {{"--workers", "0", "--chief", "--", "true"}, {"--workers", "0", "--chief", "--", "true"}},
                 "nodes_chiefs");
    const LaunchRun& run0 = runs[0];
    const LaunchRun& run1 = runs[1];
    INFO(run0.err << run1.err);
    CHECK(run0.exit_code == 2);
    CHECK(run1.exit_code == 2);
    const std::string why = "nodes 0 and 1 each have --chief; a job has one chief: give --chief to one node only";
    CHECK(Lines(run0.err).back() == "est-launch: error: " + why);
    CHECK(Lines(run1.err).back() == "est-launch: error: node 0 refused to start the job: " + why);
  }
}

TEST_CASE("A line of JSON nested 60 000 deep at the rendezvous is dropped, and the job starts", "[launch]") {
  // Anyone who reaches node 0's rendezvous port may send it anything before a token is asked.
  ScopedEnv no_token("EST_JOB_TOKEN", nullptr);
  const Ports ports = FreePorts(2, 1);
  const std::vector<std::string> rest{"--workers", "1", "--rendezvous-timeout-secs", "60", "--", "sh", "-c", "echo ran"};
  const Launch node0 = StartNode(ports, 2, 0, rest, "nodes_deep_json");
  REQUIRE(WaitForOutput(node0, "waiting at"));
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(ports.rendezvous));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0);
  const std::string line = std::string(60000, '[') + std::string(60000, ']') + "\n";
  size_t sent = 0;
  while (sent < line.size()) {
    const ssize_t n = ::send(fd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // node 0 closed it once it read the line
    sent += static_cast<size_t>(n);
  }
  ::close(fd);
  const Launch node1 = StartNode(ports, 2, 1, rest, "nodes_deep_json");
  const LaunchRun run0 = Finish(node0);
  const LaunchRun run1 = Finish(node1);
  INFO(run0.err << run1.err);
  CHECK(run0.exit_code == 0);
  CHECK(run1.exit_code == 0);
  CHECK(Contains(run0.out, "ran"));
  CHECK(Contains(run1.out, "ran"));
}

TEST_CASE("A malformed start from node 0 ends a node with one line naming the field, never an internal error",
          "[launch]") {
  // The test is node 0: it takes node 1's hello, then answers with a start whose round is text.
  ScopedEnv no_token("EST_JOB_TOKEN", nullptr);
  const Ports ports = FreePorts(2, 1);
  est_launch::NodeListener listener("127.0.0.1", ports.rendezvous);
  const Launch node1 =
      StartNode(ports, 2, 1, {"--workers", "1", "--rendezvous-timeout-secs", "20", "--", "true"}, "nodes_malformed");
  std::optional<est_launch::NodeChannel> channel;
  for (auto deadline = Clock::now() + std::chrono::seconds(20); !channel && Clock::now() < deadline;)
    if (!(channel = listener.Accept())) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  REQUIRE(channel);
  const std::optional<json> hello = channel->ReceiveOne(Clock::now() + std::chrono::seconds(20), -1);
  REQUIRE(hello);
  CHECK(est_launch::ParseHello(*hello).offer.node_rank == 1);
  est_launch::NodeStart start;
  start.cluster = {{"worker", {"127.0.0.1:" + ports.node(0), "127.0.0.1:" + ports.node(1)}}};
  start.tasks = {{est_launch::TaskType::kWorker, 1}};
  json message = est_launch::ToJson(start);
  message["start"]["round"] = "x";
  REQUIRE(channel->Send(message));
  const LaunchRun run = Finish(node1);
  INFO(run.err);
  CHECK(run.exit_code == 2);
  CHECK(Lines(run.err).back() == "est-launch: error: node 0 (" + ports.rendezvous_address() +
                                     ") sent a malformed 'start' message: 'round' is \"x\", not an integer in "
                                     "0..2147483647");
  CHECK(run.out.empty());
}

TEST_CASE("est-launch's flags across hosts are checked before anything starts", "[launch]") {
  const auto run = [](std::vector<std::string> args) {
    args.insert(args.end(), {"--", "true"});
    return Finish(Start(args, est::testing::FreshTempDir("nodes_flags")));
  };
  const auto error_of = [](const LaunchRun& r) { return r.err.substr(0, r.err.find('\n')); };
  LaunchRun r = run({"--workers", "1", "--nnodes", "2"});
  CHECK(r.exit_code == 2);
  CHECK(error_of(r) ==
        "est-launch: error: --nnodes 2 needs --rendezvous HOST:PORT, where node 0's est-launch listens (see --help)");
  r = run({"--workers", "1", "--nnodes", "2", "--node-rank", "2", "--rendezvous", "127.0.0.1:29400"});
  CHECK(r.exit_code == 2);
  CHECK(error_of(r) == "est-launch: error: --node-rank 2 is not in 0..1 (--nnodes 2) (see --help)");
  r = run({"--workers", "1", "--nnodes", "1:3", "--node-rank", "3", "--rendezvous", "127.0.0.1:29400"});
  CHECK(r.exit_code == 2);
  CHECK(error_of(r) == "est-launch: error: --node-rank 3 is not in 0..2 (--nnodes 1:3) (see --help)");
  for (const char* bad : {"3:2", "0", "x", "2:5000", "2:", ":3", "1:2:3"}) {
    r = run({"--workers", "1", "--nnodes", bad});
    CHECK(r.exit_code == 2);
    CHECK(error_of(r) == std::string("est-launch: error: --nnodes: expected N or MIN:MAX, whole numbers with 1 <= "
                                     "MIN <= MAX <= 4096, got '") +
                             bad + "' (see --help)");
  }
  r = run({"--workers", "1", "--rendezvous", "127.0.0.1:29400"});
  CHECK(r.exit_code == 2);
  CHECK(Contains(error_of(r), "--rendezvous and --node-rank are for a launch across hosts: give --nnodes 2 or more"));
  r = run({"--workers", "1", "--nnodes", "2", "--rendezvous", "127.0.0.1"});
  CHECK(r.exit_code == 2);
  CHECK(Contains(error_of(r), "--rendezvous '127.0.0.1' is not HOST:PORT"));
  r = run({"--workers", "0", "--nnodes", "2", "--rendezvous", "127.0.0.1:29400"});
  CHECK(r.exit_code == 2);
  CHECK(Contains(error_of(r), "--workers 0 with no --chief, --ps or --evaluator: this host would run no task"));
  // Node 0 listens at --rendezvous: an address of another machine is an error at once.
  r = run({"--workers", "1", "--nnodes", "2", "--rendezvous", "192.0.2.1:29400"});
  CHECK(r.exit_code == 2);
  CHECK(Contains(error_of(r), "--rendezvous 192.0.2.1:29400: node 0 cannot listen there"));
}

}  // namespace
}  // namespace est_launch_nodes_test
