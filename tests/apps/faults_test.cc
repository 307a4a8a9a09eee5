// The fault-injection suite (label "faults"): jobs of est-train processes under est-launch
// that are killed at random steps and in the middle of checkpoint writes, or stopped by
// SIGTERM / SIGINT, and must end as an uninterrupted job would.

#include <ATen/ATen.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "apps/est_launch/port_finder.h"
#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_state.h"
#include "tests/apps/run_command.h"
#include "tests/checkpoint_difference.h"
#include "tests/skip.h"
#include "tests/test_util.h"
#include "tests/tls_certificates.h"

namespace fs = std::filesystem;
using est::testing::RunCommand;
using est::testing::RunResult;

namespace {

constexpr int kMaxSteps = 40;
constexpr int kSaveSteps = 5;

// A deterministic job: the Fashion-MNIST CNN, seeded weights and shuffle, Adam, a chief and
// one worker, a checkpoint every kSaveSteps steps.
std::string TrainCommand(const std::string& model_dir) {
  return std::string(EST_TRAIN_PATH) + " --model fashion_mnist_cnn --strategy multi_worker --model-dir " +
         model_dir + " --max-steps " + std::to_string(kMaxSteps) + " --batch-size 64 --save-checkpoints-steps " +
         std::to_string(kSaveSteps) + " --log-step-count-steps 5 --seed 7 --timeout-secs 60";
}

std::string Launch(const std::string& flags, const std::string& model_dir) {
  return std::string(EST_LAUNCH_PATH) + " --chief --workers 1 --grace-secs 20 " + flags + " -- " +
         TrainCommand(model_dir);
}

// The faults to inject: crash-point files "<task>@<point>@<step>+" (see common/crash_point.h),
// from distinct steps drawn from `seed`. Each fires the first time its task passes the point at
// that step or later: checkpoints are written beside the steps that follow them, so which point
// a run passes first depends on timing, and a restart may resume from a checkpoint past a
// fault's step, which must still fire. Checkpoint points fire on the chief at save steps.
std::vector<std::string> DrawFaults(uint32_t seed, int count) {
  std::mt19937 random(seed);
  const std::vector<std::string> step_faults = {"chief-0@after_step", "worker-0@after_step"};
  const std::vector<std::string> save_faults = {"chief-0@checkpoint_data", "chief-0@checkpoint_index",
                                                "chief-0@checkpoint_state", "chief-0@checkpoint_retention"};
  std::set<int> used;
  std::vector<std::string> faults;
  while (static_cast<int>(faults.size()) < count) {
    const bool during_save = faults.size() % 2 == 1;  // alternate: half of them inside a checkpoint write
    const int step = during_save ? kSaveSteps * std::uniform_int_distribution<int>(1, kMaxSteps / kSaveSteps - 1)(random)
                                 : std::uniform_int_distribution<int>(2, kMaxSteps - 2)(random);
    if (!used.insert(step).second) continue;
    const auto& kinds = during_save ? save_faults : step_faults;
    faults.push_back(kinds[std::uniform_int_distribution<size_t>(0, kinds.size() - 1)(random)] + "@" +
                     std::to_string(step) + "+");
  }
  return faults;
}

int CountOf(const std::string& text, const std::string& part) {
  int count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}


uint32_t FaultsSeed() {
  if (const char* text = std::getenv("EST_FAULTS_SEED")) return static_cast<uint32_t>(std::stoul(text));
  return std::random_device()();
}

// Shell code that waits until a line of file `log` matches grep pattern `pattern` (checked
// every 50 ms, for at most 60 s).
std::string WaitForLine(const std::string& pattern, const std::string& log) {
  return "for i in $(seq 1200); do grep -q '" + pattern + "' " + log + " && break; sleep 0.05; done; ";
}

// Shell code that sets variable `var` to the pid of est-launch's task `task` ("worker-1"):
// the child of the est-launch whose pid is in $pid with that EST_TASK.
std::string FindTaskPid(const std::string& task, const std::string& var) {
  return "for s in /proc/[0-9]*/stat; do read -r p c st pp rest < $s 2>/dev/null || continue; [ \"$pp\" = $pid ] && "
         "tr '\\0' '\\n' < /proc/$p/environ | grep -qx EST_TASK=" +
         task + " && " + var + "=$p; done; ";
}

}  // namespace

TEST_CASE("a job killed at random steps and inside checkpoint writes ends as an uninterrupted one", "[apps][faults]") {
  const uint32_t seed = FaultsSeed();
  INFO("EST_FAULTS_SEED=" << seed << " repeats these faults");
  const std::string reference_dir = est::testing::FreshTempDir("faults_reference").string();
  RunResult reference = RunCommand(Launch("", reference_dir));
  INFO(reference.output);
  REQUIRE(reference.exit_code == 0);

  const fs::path crash_points = est::testing::FreshTempDir("faults_points");
  const std::vector<std::string> faults = DrawFaults(seed, 4);
  std::string listed;
  for (const auto& fault : faults) {
    std::ofstream(crash_points / fault).put('\n');
    listed += fault + " ";
  }
  INFO("faults: " << listed);
  const std::string dir = est::testing::FreshTempDir("faults_run").string();
  RunResult run = RunCommand("EST_CRASH_POINTS_DIR=" + crash_points.string() + " " +
                             Launch("--max-restarts 8 --restart-backoff-secs 0.1", dir));
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  // Every fault fired, each one killed a task with SIGKILL, and the group was restarted.
  CHECK(est::testing::CountEntries(crash_points) == 0);
  const int restarts = CountOf(run.output, "; restarting every task in ");
  CHECK(restarts >= 1);
  CHECK(restarts <= static_cast<int>(faults.size()));
  CHECK(CountOf(run.output, " was killed by SIGKILL") >= restarts);
  CHECK(CountOf(run.output, "Restoring parameters from ") >= 2);
  // No temporary file is left, the job reached max_steps, and it learnt exactly what the
  // uninterrupted job learnt: no batch was skipped or seen twice.
  for (const auto& entry : fs::directory_iterator(dir))
    CHECK(entry.path().filename().string().find(".tmp-") == std::string::npos);
  const std::string last = dir + "/model.ckpt-" + std::to_string(kMaxSteps);
  REQUIRE(est::checkpoint::LatestCheckpoint(dir) == last);
  CHECK(est::testing::CheckpointDifference(reference_dir + "/model.ckpt-" + std::to_string(kMaxSteps), last) == "");
}

TEST_CASE("a worker killed without restarts makes the others fail fast, naming it", "[apps][faults]") {
  const fs::path crash_points = est::testing::FreshTempDir("faults_kill_points");
  std::ofstream(crash_points / "worker-0@after_step@6").put('\n');
  const std::string dir = est::testing::FreshTempDir("faults_kill").string();
  const auto start = std::chrono::steady_clock::now();
  RunResult run = RunCommand("EST_CRASH_POINTS_DIR=" + crash_points.string() + " " + Launch("", dir));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(run.output);
  CHECK(run.exit_code == 1);
  CHECK(run.output.find("est-launch: worker 0 was killed by SIGKILL") != std::string::npos);
  // The chief, inside the next all-reduce, learns that rank 1 is gone well before its 60 s timeout.
  CHECK(std::regex_search(run.output, std::regex(R"(\[chief 0\] .*rank 1.*(exited|closed))")));
  CHECK(seconds < 30);
  // What the chief saved before stays a valid checkpoint.
  CHECK(est::checkpoint::LatestCheckpoint(dir) == dir + "/model.ckpt-5");
}

TEST_CASE("SIGTERM or SIGINT stops every task after the same step, with a checkpoint there", "[apps][faults]") {
  const std::string dir = est::testing::FreshTempDir("faults_sigterm").string();
  // Training that would last long; the signal comes once the first checkpoint exists and the
  // output holds `ready`, if given (under est-launch the evaluator may still be starting when
  // the chief has saved, and a process that has not yet caught the signals just ends).
  const std::string train = std::string(EST_TRAIN_PATH) + " --model linear --model-dir " + dir +
                            " --max-steps 100000000 --save-checkpoints-steps 50 --log-step-count-steps 1000";
  const std::string log = (est::testing::FreshTempDir("faults_sigterm_log") / "output").string();
  auto run_until_signal = [&](const std::string& command, const std::string& signal, const std::string& ready) {
    std::string is_ready = "[ -e " + dir + "/checkpoint ]";
    if (!ready.empty()) is_ready += " && grep -qF '" + ready + "' " + log;
    return RunCommand("(" + command + " > " + log + " 2>&1 & pid=$!; for i in $(seq 600); do " + is_ready +
                      " && break; sleep 0.05; done; kill -" + signal + " $pid; wait $pid; status=$?; cat " + log +
                      "; exit $status)");
  };
  SECTION("a cluster with an evaluator under est-launch gets SIGTERM") {
    RunResult run = run_until_signal(std::string(EST_LAUNCH_PATH) + " --workers 2 --evaluator -- " + train +
                                         " --strategy multi_worker --timeout-secs 60",
                                     "TERM", "Running the evaluator");
    INFO(run.output);
    CHECK(run.exit_code == 143);
    std::smatch chief;
    REQUIRE(std::regex_search(run.output, chief,
                              std::regex(R"(\[worker 0\] est-train: training stopped by SIGTERM at global step (\d+); saved)")));
    const std::string step = chief[1];
    CHECK(run.output.find("[worker 1] est-train: training stopped by SIGTERM at global step " + step +
                          "; the chief saved") != std::string::npos);
    CHECK(run.output.find("est-launch: worker 0 exited with status 143") != std::string::npos);
    CHECK(run.output.find("est-launch: worker 1 exited with status 143") != std::string::npos);
    CHECK(run.output.find("[evaluator 0] est-train: evaluator stopped by SIGTERM") != std::string::npos);
    CHECK(run.output.find("est-launch: evaluator 0 exited with status 143") != std::string::npos);
    CHECK(est::checkpoint::LatestCheckpoint(dir) == dir + "/model.ckpt-" + step);
  }
  SECTION("a single process gets SIGINT (Ctrl-C)") {
    RunResult run = run_until_signal(train, "INT", "");
    INFO(run.output);
    CHECK(run.exit_code == 130);
    std::smatch stopped;
    REQUIRE(std::regex_search(run.output, stopped,
                              std::regex(R"(est-train: training stopped by SIGINT at global step (\d+); saved)")));
    CHECK(est::checkpoint::LatestCheckpoint(dir) == dir + "/model.ckpt-" + stopped[1].str());
  }
}

TEST_CASE("a hung worker: SIGUSR1 dumps every rank's flight recorder, and the timeout names the stopped rank",
          "[apps][faults]") {
  const std::string dir = est::testing::FreshTempDir("faults_hung").string();
  const std::string log = (est::testing::FreshTempDir("faults_hung_log") / "output").string();
  const std::string train = std::string(EST_TRAIN_PATH) + " --model linear --strategy multi_worker --model-dir " + dir +
                            " --max-steps 100000000 --save-checkpoints-steps 50 --log-step-count-steps 1000 "
                            "--timeout-secs 6";
  // Once training runs, worker 1 is stopped (SIGSTOP) inside the job; 2 s later est-launch
  // gets SIGUSR1, which it forwards to both workers; worker 0, waiting for worker 1 inside an
  // all-reduce, logs where it is, and 6 s into that wait its timeout names rank 1.
  const auto start = std::chrono::steady_clock::now();
  RunResult run =
      RunCommand("(" + std::string(EST_LAUNCH_PATH) + " --workers 2 --grace-secs 2 -- " + train + " > " + log +
                 " 2>&1 & pid=$!; for i in $(seq 600); do [ -e " + dir + "/checkpoint ] && break; sleep 0.05; done; " +
                 FindTaskPid("worker-1", "w") +
                 "kill -STOP $w; sleep 2; kill -USR1 $pid; wait $pid; status=$?; kill -CONT $w 2>/dev/null; cat " +
                 log + "; exit $status)");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(run.output);
  CHECK(run.exit_code == 1);
  CHECK(run.output.find("est-launch: caught SIGUSR1; forwarded it to worker 0, worker 1 (each logs its flight "
                        "recorders)") != std::string::npos);
  // The dump: worker 0 is inside a call (an all-reduce through shared memory, as both run on
  // this host, or one of Gloo's over TCP).
  CHECK(std::regex_search(run.output,
                          std::regex(R"(\[worker 0\] .*received SIGUSR1: flight recorder of gloo(\+shm)? )"
                                     R"(rank 0 of 2 \(host [^,]+, pid \d+\): \d+ calls; inside [a-z]+ #\d+.* )"
                                     R"(for [0-9.]+ s; its last completed call is )")));
  // The timeout names the stopped rank, and the recorder logs the failed call at the end.
  CHECK(std::regex_search(run.output,
                          std::regex(R"(\[worker 0\] .*did not complete within 6 s: rank 1.* did not arrive)")));
  CHECK(std::regex_search(run.output, std::regex(R"(\[worker 0\] .*At its end, flight recorder of gloo(\+shm)? rank 0 )"
                                                 R"(of 2 .*: \d+ calls; [a-z]+ #\d+.* failed)")));
  CHECK(seconds < 40);
}

TEST_CASE("est-launch killed with SIGKILL: every task stops after the same step, the chief saves there, none trains on",
          "[apps][faults]") {
  const std::string dir = est::testing::FreshTempDir("faults_launcher_killed").string();
  const std::string log = (est::testing::FreshTempDir("faults_launcher_killed_log") / "output").string();
  // No periodic checkpoint after the first: the next one can only be the stop's.
  const std::string train = std::string(EST_TRAIN_PATH) + " --model linear --model-dir " + dir +
                            " --max-steps 100000000 --save-checkpoints-steps 100000000 --log-step-count-steps 1000" +
                            " --strategy multi_worker --timeout-secs 60";
  const std::string launch = std::string(EST_LAUNCH_PATH) + " --workers 2 --evaluator -- " + train;
  // Kill the launcher once the first checkpoint exists and the evaluator runs; then wait
  // for every task (a process with the launch's EST_JOB_ID in its environment) to be gone.
  const std::string count_tasks =
      "$(grep -lsx \"EST_JOB_ID=$job\" --null-data /proc/[0-9]*/environ | wc -l)";
  RunResult run = RunCommand(
      "(" + launch + " > " + log + " 2>&1 & pid=$!; for i in $(seq 600); do [ -e " + dir +
      "/checkpoint ] && grep -qF 'Running the evaluator' " + log + " && break; sleep 0.05; done; " +
      "job=$(sed -n 's/.*EST_JOB_ID=\\([0-9a-f]*\\).*/\\1/p' " + log + " | head -1); kill -KILL $pid; wait $pid; " +
      "start=$(date +%s%N); for i in $(seq 400); do [ " + count_tasks + " -eq 0 ] && break; sleep 0.05; done; " +
      "end=$(date +%s%N); cat " + log + "; echo; echo \"job $job: tasks left: " + count_tasks +
      " after $(( (end - start) / 1000000 )) ms\")");
  INFO(run.output);
  std::smatch left;
  REQUIRE(std::regex_search(run.output, left, std::regex(R"(job [0-9a-f]+: tasks left: (\d+) after (\d+) ms)")));
  CHECK(left[1] == "0");
  CHECK(std::stol(left[2]) < 15000);
  // The first checkpoint came at step 0 (the stop's is later): the chief saved after the stop.
  const std::optional<std::string> latest = est::checkpoint::LatestCheckpoint(dir);
  REQUIRE(latest.has_value());
  est::checkpoint::CheckpointReader reader(*latest);
  reader.verify();
  CHECK(reader.global_step() > 0);
  CHECK(*latest == dir + "/model.ckpt-" + std::to_string(reader.global_step()));
}

namespace {

// A parameter-server job of the Fashion-MNIST CNN: a chief, a worker and a ps task, each
// failed task restarted alone, a checkpoint every 20 steps.
std::string PsLaunch(const std::string& model_dir, int max_steps) {
  return std::string(EST_LAUNCH_PATH) + " --chief --workers 1 --ps 1 --max-restarts 2 --restart-backoff-secs 0.2 " +
         "--grace-secs 20 -- " + EST_TRAIN_PATH + " --model fashion_mnist_cnn --strategy parameter_server " +
         "--model-dir " + model_dir + " --max-steps " + std::to_string(max_steps) +
         " --batch-size 32 --save-checkpoints-steps 20 --log-step-count-steps 10 --seed 7 --timeout-secs 60";
}

// Every checkpoint left in `dir` reads back whole, its CRCs checked.
void CheckEveryCheckpointValid(const std::string& dir) {
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".index") continue;
    const std::string prefix = (entry.path().parent_path() / entry.path().stem()).string();
    INFO("checkpoint " << prefix);
    CHECK_NOTHROW(est::checkpoint::CheckpointReader(prefix).verify());
    ++checked;
  }
  CHECK(checked >= 1);
}

// The global step of `dir`'s latest checkpoint.
int64_t LatestStep(const std::string& dir) {
  const std::optional<std::string> latest = est::checkpoint::LatestCheckpoint(dir);
  REQUIRE(latest);
  return est::checkpoint::CheckpointReader(*latest).global_step();
}

}  // namespace

TEST_CASE("parameter servers: a worker killed mid-run is restarted alone while the chief trains on", "[apps][faults]") {
  const fs::path crash_points = est::testing::FreshTempDir("faults_ps_worker_points");
  // Both workers advance the global step, so the worker may skip any given step: it dies at
  // the first step it passes from 60 on.
  std::ofstream(crash_points / "worker-0@after_step@60+").put('\n');
  const std::string dir = est::testing::FreshTempDir("faults_ps_worker").string();
  RunResult run = RunCommand("EST_CRASH_POINTS_DIR=" + crash_points.string() + " " + PsLaunch(dir, 300));
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(est::testing::CountEntries(crash_points) == 0);
  CHECK(run.output.find("est-launch: worker 0 was killed by SIGKILL; restarting it alone") != std::string::npos);
  // The chief did not stop: it logged steps while the worker was gone, and the restarted
  // worker went on from its own input position.
  CHECK(CountOf(run.output, "[chief 0] est-train: ") == 0);
  CHECK(run.output.find("[worker 0] ") != std::string::npos);
  CHECK(run.output.find("Continuing the input where this worker's last push left it") != std::string::npos);
  CHECK(LatestStep(dir) >= 300);
  CheckEveryCheckpointValid(dir);
}

TEST_CASE("parameter servers: a worker started by hand beyond the cluster joins the running job", "[apps][faults]") {
  // est-launch runs a chief, 1 worker and 1 ps task (asynchronous updates). Once they train, a
  // third est-train is started by hand with the job's id and token and a TF_CONFIG that lists
  // one more worker (index 1): the ps task takes its pushes as a new worker's, counting it from
  // the slowest worker's pushes, and it trains until the chief ends the job at max_steps.
  const std::string dir = est::testing::FreshTempDir("faults_ps_added").string();
  const fs::path logs = est::testing::FreshTempDir("faults_ps_added_logs");
  const std::string launch_log = (logs / "launch").string();
  const std::string added_log = (logs / "added").string();
  const int port = est_launch::FindFreePortRange("127.0.0.1", 4);  // chief, worker 0, ps 0, the added worker
  const auto address = [&](int offset) { return "\"127.0.0.1:" + std::to_string(port + offset) + "\""; };
  const std::string tf_config = (logs / "tf_config.json").string();
  std::ofstream(tf_config) << R"({"cluster": {"chief": [)" << address(0) << R"(], "worker": [)" << address(1) << ", "
                           << address(3) << R"(], "ps": [)" << address(2)
                           << R"(]}, "task": {"type": "worker", "index": 1}})";
  const std::string train = std::string(EST_TRAIN_PATH) +
                            " --model fashion_mnist_cnn --strategy parameter_server --ps-mode bounded --model-dir " +
                            dir +
                            " --max-steps 600 --batch-size 32 --save-checkpoints-steps 100 "
                            "--log-step-count-steps 10 --seed 7 --timeout-secs 60";
  RunResult run = RunCommand("(export EST_JOB_TOKEN=faults-ps-added-token; " + std::string(EST_LAUNCH_PATH) +
                             " --port " + std::to_string(port) + " --chief --workers 1 --ps 1 -- " + train + " > " +
                             launch_log + " 2>&1 & pid=$!; " + WaitForLine("chief 0.*global_step/sec", launch_log) +
                             "job=$(sed -n 's/.*EST_JOB_ID=\\([0-9a-f]*\\).*/\\1/p' " + launch_log +
                             " | head -n 1); TF_CONFIG=$(cat " + tf_config + ") EST_JOB_ID=$job " + train + " > " +
                             added_log + " 2>&1; echo \"added worker exit status $?\"; wait $pid; status=$?; cat " +
                             launch_log + "; sed 's/^/[added] /' " + added_log + "; exit $status)");
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(run.output.find("added worker exit status 0") != std::string::npos);
  CHECK(std::regex_search(run.output,
                          std::regex(R"(\[added\] .*Worker 2 joins a running job whose chief started it with 2 )")));
  CHECK(std::regex_search(run.output,
                          std::regex(R"(\[ps 0\] .*ps 0: worker 2 joins the running job \(2 worker\(s\) before it\); )"
                                     R"(it counts from \d+ pushes)")));
  CHECK(std::regex_search(run.output, std::regex(R"(\[added\] .*global_step/sec)")));  // it trained
  CHECK(LatestStep(dir) >= 600);
  CheckEveryCheckpointValid(dir);
}

TEST_CASE("parameter servers: a ps task killed mid-run is restored by the chief from the latest checkpoint", "[apps][faults]") {
  const fs::path crash_points = est::testing::FreshTempDir("faults_ps_points");
  std::ofstream(crash_points / "ps-0@push@70").put('\n');
  const std::string dir = est::testing::FreshTempDir("faults_ps").string();
  RunResult run = RunCommand("EST_CRASH_POINTS_DIR=" + crash_points.string() + " " + PsLaunch(dir, 200));
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(est::testing::CountEntries(crash_points) == 0);
  CHECK(run.output.find("est-launch: ps 0 was killed by SIGKILL; restarting it alone") != std::string::npos);
  CHECK(run.output.find("restoring every ps task from the latest checkpoint") != std::string::npos);
  // The latest checkpoint before the ps died (at step 70) held what was restored.
  std::smatch restored;
  REQUIRE(std::regex_search(run.output, restored,
                            std::regex(R"(\[chief 0\] .*Restored the variables on 1 ps task\(s\) at global step (\d+))")));
  CHECK(std::stoi(restored[1]) >= 20);
  CHECK(std::stoi(restored[1]) <= 70);
  CHECK(run.output.find("[worker 0] ") != std::string::npos);
  CHECK(LatestStep(dir) >= 200);
  CheckEveryCheckpointValid(dir);
}

TEST_CASE("parameter servers, sync mode: with a worker dead, the chief still stops on SIGTERM and saves",
          "[apps][faults]") {
  // The chief's sync push waits for the dead worker's (for up to --timeout-secs); est-launch's
  // SIGTERM must end that wait, not its SIGKILL --grace-secs later.
  const fs::path crash_points = est::testing::FreshTempDir("faults_ps_sync_points");
  std::ofstream(crash_points / "worker-0@after_step@30+").put('\n');
  const std::string dir = est::testing::FreshTempDir("faults_ps_sync").string();
  RunResult run = RunCommand("EST_CRASH_POINTS_DIR=" + crash_points.string() + " " + EST_LAUNCH_PATH +
                             " --chief --workers 1 --ps 1 --grace-secs 60 -- " + EST_TRAIN_PATH +
                             " --model linear --strategy parameter_server --ps-mode sync --model-dir " + dir +
                             " --max-steps 1000000 --save-checkpoints-steps 100000 --timeout-secs 300");
  INFO(run.output);
  CHECK(run.exit_code == 1);
  CHECK(run.output.find("est-launch: worker 0 was killed by SIGKILL; stopping the other tasks") != std::string::npos);
  CHECK(run.output.find("est-launch: chief 0 exited with status 143") != std::string::npos);
  CHECK(run.output.find("did not stop within") == std::string::npos);
  CHECK(LatestStep(dir) >= 30);
  CheckEveryCheckpointValid(dir);
}

TEST_CASE("a parameter-server job over mutual TLS that fails ends every task by its own exit, never a crash",
          "[apps][faults]") {
  // Once seen under load: a task crashing at exit (gRPC's and OpenSSL's teardown racing a
  // connection attempt) after a job over TLS failed. The same exit path, three times over.
  const fs::path certificates = est::testing::FreshTempDir("faults_tls_certificates");
  est::testing::MakeCertificate(certificates, "ca");
  est::testing::MakeCertificate(certificates, "task", "ca");
  const std::string c = certificates.string() + "/";
  for (int run_index = 0; run_index < 3; ++run_index) {
    const fs::path crash_points = est::testing::FreshTempDir("faults_tls_points_" + std::to_string(run_index));
    std::ofstream(crash_points / ("worker-0@after_step@" + std::to_string(3 + 4 * run_index) + "+")).put('\n');
    const std::string dir = est::testing::FreshTempDir("faults_tls_" + std::to_string(run_index)).string();
    RunResult run = RunCommand("EST_CRASH_POINTS_DIR=" + crash_points.string() + " " + EST_LAUNCH_PATH +
                               " --chief --workers 1 --ps 2 --grace-secs 60 --tls-ca-file " + c +
                               "ca.pem --tls-cert-file " + c + "task.pem --tls-key-file " + c +
                               "task.key --tls-require-client-cert -- " + EST_TRAIN_PATH +
                               " --model linear --strategy parameter_server --model-dir " + dir +
                               " --max-steps 1000000 --save-checkpoints-steps 100000 --timeout-secs 60");
    INFO("run " << run_index << ":\n" << run.output);
    CHECK(run.exit_code == 1);
    CHECK(run.output.find("est-launch: worker 0 was killed by SIGKILL; stopping the other tasks") != std::string::npos);
    // Every other task exits by itself, none by a crash: the chief with SIGTERM's status.
    for (const char* crash : {"SIGSEGV", "SIGABRT", "SIGBUS", "AddressSanitizer", "runtime error:", "did not stop within"})
      CHECK(run.output.find(crash) == std::string::npos);
    CHECK(run.output.find("est-launch: chief 0 exited with status 143") != std::string::npos);
  }
}

namespace {

// The largest of |a - b| / |b| (Frobenius norms) over the tensors of checkpoints `a` and `b`,
// which must hold the same global step and tensor names.
double CheckpointRelativeDifference(const std::string& a, const std::string& b) {
  const est::checkpoint::CheckpointReader first(a);
  const est::checkpoint::CheckpointReader second(b);
  REQUIRE(first.global_step() == second.global_step());
  REQUIRE(first.tensor_names() == second.tensor_names());
  double largest = 0;
  for (const std::string& name : first.tensor_names()) {
    const at::Tensor x = first.tensor(name).to(at::kDouble);
    const at::Tensor y = second.tensor(name).to(at::kDouble);
    largest = std::max(largest, (x - y).norm().item<double>() / std::max(y.norm().item<double>(), 1e-12));
  }
  return largest;
}

// Runs `command` in the background, its output into file `log`, until the shell condition
// `ready` holds (checked every 50 ms, for at most 60 s); half a second later sends it SIGTERM.
// Returns its exit status and output.
RunResult RunUntilThenStop(const std::string& command, const std::string& log, const std::string& ready) {
  return RunCommand("(" + command + " > " + log + " 2>&1 & pid=$!; for i in $(seq 1200); do " + ready +
                    " && break; sleep 0.05; done; sleep 0.5; kill -TERM $pid; wait $pid; status=$?; cat " + log +
                    "; exit $status)");
}

// est-train in the in-job recovery tests: Fashion-MNIST's CNN on 6 logical input shards, a
// global batch of 96, checkpoints every `save_steps`, collectives that time out after
// `timeout_secs`. Adam at 1e-4, not the CNN's 1e-3: workers sum the shards' gradients in another
// order than 1 worker, and Adam turns that float32 rounding into steps of up to the learning
// rate where a gradient is near 0, so the difference to 1 worker grows with it and with the
// steps run (at 1e-3 it reached 1e-5 after some 50 steps). A shard's batch missed or read twice
// changes a step's gradient by a sixth, which no learning rate brings near rounding.
std::string ElasticTrain(const std::string& dir, const std::string& max_steps, const std::string& save_steps,
                         const std::string& timeout_secs = "60") {
  return std::string(EST_TRAIN_PATH) + " --model fashion_mnist_cnn --strategy multi_worker --model-dir " + dir +
         " --max-steps " + max_steps + " --batch-size 96 --logical-input-shards 6 --save-checkpoints-steps " +
         save_steps + " --seed 7 --learning-rate 1e-4 --timeout-secs " + timeout_secs;
}

// The checkpoint at `max_steps` of 1 worker reading all 6 shards (ElasticTrain), in a new
// directory named after `name`.
std::string ElasticReference(const std::string& name, const std::string& max_steps) {
  const std::string dir = est::testing::FreshTempDir(name).string();
  RunResult reference =
      RunCommand(std::string(EST_LAUNCH_PATH) + " --workers 1 -- " + ElasticTrain(dir, max_steps, max_steps));
  INFO(reference.output);
  REQUIRE(reference.exit_code == 0);
  return dir + "/model.ckpt-" + max_steps;
}

// The global step at which the chief of a job stopped by SIGTERM saved.
std::string ChiefStoppedAt(const std::string& output) {
  std::smatch stopped;
  REQUIRE(std::regex_search(
      output, stopped,
      std::regex(R"(\[chief 0\] est-train: training stopped by SIGTERM at global step (\d+); saved)")));
  return stopped[1];
}

// That `dir`'s latest checkpoint is at `step` and holds what 1 worker reading all 6 shards
// learns in `step` steps (ElasticReference, into a directory named after `name`), up to
// float32 rounding.
void CheckLikeOneWorker(const std::string& dir, const std::string& step, const std::string& name) {
  REQUIRE(est::checkpoint::LatestCheckpoint(dir) == dir + "/model.ckpt-" + step);
  CHECK(CheckpointRelativeDifference(dir + "/model.ckpt-" + step, ElasticReference(name, step)) <= 1e-5);
}

// Shell code that starts est-launch with a chief and 1 worker of `train` under --min-workers 2
// --max-workers 3, its output in `launch_log`, with job token `token`; once the chief trains,
// starts `added` (an est-train command) by hand as worker 1 of a TF_CONFIG (written into `logs`)
// that lists one more worker than the cluster, with the job's id, its output in `added_log`.
// Leaves est-launch's pid in $pid; `added_tail` follows the added command (" &", "; ...").
std::string LaunchAndAddWorker(const fs::path& logs, const std::string& token, const std::string& train,
                               const std::string& added, const std::string& launch_log, const std::string& added_log,
                               const std::string& added_tail) {
  const int port = est_launch::FindFreePortRange("127.0.0.1", 3);
  const auto address = [&](int offset) { return "\"127.0.0.1:" + std::to_string(port + offset) + "\""; };
  const std::string tf_config = (logs / "tf_config.json").string();
  std::ofstream(tf_config) << R"({"cluster": {"chief": [)" << address(0) << R"(], "worker": [)" << address(1) << ", "
                           << address(2) << R"(]}, "task": {"type": "worker", "index": 1}})";
  return "export EST_JOB_TOKEN=" + token + "; " + std::string(EST_LAUNCH_PATH) + " --port " + std::to_string(port) +
         " --chief --workers 1 --min-workers 2 --max-workers 3 -- " + train + " > " + launch_log + " 2>&1 & pid=$!; " +
         WaitForLine("chief 0.*global_step/sec", launch_log) + "job=$(sed -n 's/.*EST_JOB_ID=\\([0-9a-f]*\\).*/\\1/p' " +
         launch_log + " | head -n 1); TF_CONFIG=$(cat " + tf_config +
         ") EST_JOB_ID=$job EST_MIN_WORKERS=2 EST_MAX_WORKERS=3 " + added + " > " + added_log + " 2>&1" + added_tail;
}

}  // namespace

TEST_CASE("--min-workers: a worker killed mid-run, the others re-form the group and train on like 1 worker",
          "[apps][faults]") {
  // 6 logical input shards: 2 per task of 3, then 3 per task of the 2 left. Every global step
  // reads one batch of each shard, so the job learns what 1 worker reading all 6 learns, up to
  // float32 rounding (the gradients are summed in another order).
  const std::string reference = ElasticReference("faults_elastic_reference", "16");

  const fs::path crash_points = est::testing::FreshTempDir("faults_elastic_points");
  std::ofstream(crash_points / "worker-1@after_step@6").put('\n');
  const std::string dir = est::testing::FreshTempDir("faults_elastic").string();
  const auto start = std::chrono::steady_clock::now();
  RunResult run = RunCommand("EST_CRASH_POINTS_DIR=" + crash_points.string() + " " + EST_LAUNCH_PATH +
                             " --chief --workers 2 --min-workers 2 -- " + ElasticTrain(dir, "16", "8"));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(est::testing::CountEntries(crash_points) == 0);
  CHECK(run.output.find("est-launch: worker 1 was killed by SIGKILL; the 2 other training tasks train on without it "
                        "(--min-workers 2)") != std::string::npos);
  // Worker 1 is rank 2; the others learn of it in step 7's all-reduce, long before the timeout.
  CHECK(std::regex_search(run.output, std::regex(R"(\[chief 0\] .*generation 1 of the training group lost rank 2)")));
  CHECK(run.output.find("[worker 0] ") != std::string::npos);
  CHECK(std::regex_search(run.output, std::regex(R"(\[worker 0\] .*training on as worker 1 of 2 \(generation 2\))")));
  // Each survivor goes on with its own 2 shards where they were, and opens 1 of the lost worker's.
  CHECK(CountOf(run.output, "6 logical shards; this worker reads 3 of them, going on with the 2 it read before") == 2);
  CHECK(seconds < 50);
  const std::string last = dir + "/model.ckpt-16";
  REQUIRE(est::checkpoint::LatestCheckpoint(dir) == last);
  CHECK(CheckpointRelativeDifference(last, reference) <= 1e-5);
}

TEST_CASE("--min-workers: a worker killed before the first step, the others start without it like 1 worker",
          "[apps][faults]") {
  // Worker 1 (rank 2) dies once its input is open, before the start's first all-reduce: the
  // chief and worker 0 form generation 2 without it and deal the 6 shards afresh, 3 each.
  const std::string reference = ElasticReference("faults_start_lost_reference", "16");
  const fs::path crash_points = est::testing::FreshTempDir("faults_start_lost_points");
  std::ofstream(crash_points / "worker-1@start_input@0").put('\n');
  const std::string dir = est::testing::FreshTempDir("faults_start_lost").string();
  RunResult run = RunCommand("EST_CRASH_POINTS_DIR=" + crash_points.string() + " " + EST_LAUNCH_PATH +
                             " --chief --workers 2 --min-workers 2 -- " + ElasticTrain(dir, "16", "8"));
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(est::testing::CountEntries(crash_points) == 0);
  CHECK(CountOf(run.output, "Starting the training failed: ") == 2);
  CHECK(std::regex_search(run.output, std::regex(R"(\[worker 0\] .*training on as worker 1 of 2 \(generation 2\))")));
  CHECK(CountOf(run.output, "6 logical shards; this worker reads 3 of them, going on with the 0 it read before") == 2);
  CHECK(CountOf(run.output, "Training goes on from global step 0 (the chief's) with 2 worker(s)") == 2);
  const std::string last = dir + "/model.ckpt-16";
  REQUIRE(est::checkpoint::LatestCheckpoint(dir) == last);
  CHECK(CheckpointRelativeDifference(last, reference) <= 1e-5);
}

TEST_CASE("--min-workers: a stopped worker is named by the flight recorder, left out, and taken back as a newcomer",
          "[apps][faults]") {
  // A chief and 2 workers, --min-workers 2, collectives that time out after 4 s. Worker 1
  // (rank 2) is stopped (SIGSTOP) while the job trains: the others' all-reduce times out, its
  // flight recorders' diagnosis names rank 2 as the rank that sent no record, and the chief
  // closes generation 2 without it after the settle time (the timeout again); the 2 left train
  // on. Then worker 1 continues (SIGCONT): its own call fails, it finds generation 2 closed
  // without it and joins generation 3 as a newcomer, reading none of the shards it held (the
  // others read them now) until the shards are dealt again. SIGTERM stops the job at a step S,
  // which equals 1 worker trained S steps.
  const std::string dir = est::testing::FreshTempDir("faults_stopped").string();
  const std::string log = (est::testing::FreshTempDir("faults_stopped_log") / "output").string();
  const std::string launch = std::string(EST_LAUNCH_PATH) + " --chief --workers 2 --min-workers 2 --grace-secs 20 -- " +
                             ElasticTrain(dir, "100000000", "100000", "4") + " --log-step-count-steps 2";
  const auto wait_for = [&](const std::string& pattern) { return WaitForLine(pattern, log); };
  RunResult run = RunCommand("(" + launch + " > " + log + " 2>&1 & pid=$!; " + wait_for("chief 0.*global_step/sec") +
                             FindTaskPid("worker-1", "w") + "kill -STOP $w; " +
                             wait_for("worker 0.*training on as worker 1 of 2 (generation 2)") +
                             "sleep 1; kill -CONT $w; " + wait_for("going on with the 0 it read before") +
                             "sleep 0.5; kill -TERM $pid; wait $pid; status=$?; cat " + log + "; exit $status)");
  INFO(run.output);
  REQUIRE(run.exit_code == 143);
  // The others' step fails on the timeout naming the stopped rank, on each of them: shared
  // memory names it and its pid (the rank that timed out first, and the one that saw it do so),
  // Gloo over TCP by its flight recorders' diagnosis.
  for (const std::string task : {"chief 0", "worker 0"})
    CHECK(std::regex_search(
        run.output, std::regex(R"(\[)" + task +
                               R"(\] .*The step after global step \d+ failed: .*(rank 2 \(pid \d+\) )"
                               R"(did not arrive|flight recorder: rank 2 \(host [^,]+, pid \d+\) sent no record))")));
  CHECK(std::regex_search(run.output,
                          std::regex(R"(\[chief 0\] .*Generation 2 of the training group closes without 'worker 2, )"
                                     R"(pid \d+ on [^']+' of generation 1, which did not come within)")));
  CHECK(std::regex_search(run.output, std::regex(R"(\[worker 0\] .*training on as worker 1 of 2 \(generation 2\))")));
  CHECK(CountOf(run.output, "6 logical shards; this worker reads 3 of them, going on with the 2 it read before") == 2);
  // Continued, worker 1 is taken back as a newcomer with none of its shards.
  CHECK(std::regex_search(run.output, std::regex(R"(\[worker 1\] .*came back after generation 2 closed without it: )"
                                                 R"(it joined generation 3 as a newcomer)")));
  CHECK(std::regex_search(run.output,
                          std::regex(R"(\[worker 1\] .*6 logical shards; this worker reads 2 of them, going on with )"
                                     R"(the 0 it read before)")));
  CHECK(std::regex_search(run.output, std::regex(R"(\[worker 0\] .*training on as worker 1 of 3 \(generation 3\))")));
  const std::string step = ChiefStoppedAt(run.output);
  CHECK(run.output.find("[worker 1] est-train: training stopped by SIGTERM at global step " + step) !=
        std::string::npos);
  CheckLikeOneWorker(dir, step, "faults_stopped_reference");
}

TEST_CASE("--min-workers: a worker stopped and cut off is stopped by est-launch once the job ends, which exits 0",
          "[apps][faults]") {
  // A chief and 2 workers, --min-workers 2. Worker 1 is stopped (SIGSTOP) while the job trains:
  // the chief cuts it off after the beat lease and the 2 left train on to max_steps. The stopped
  // worker would never exit: 3 s (--grace-secs) after the chief's end est-launch stops it, and
  // ends with the job's status, 0.
  const std::string dir = est::testing::FreshTempDir("faults_straggler").string();
  const std::string log = (est::testing::FreshTempDir("faults_straggler_log") / "output").string();
  const std::string launch = std::string(EST_LAUNCH_PATH) + " --chief --workers 2 --min-workers 2 --grace-secs 3 -- " +
                             ElasticTrain(dir, "300", "100") + " --log-step-count-steps 2 --beat-lease-secs 2";
  RunResult run = RunCommand("(" + launch + " > " + log + " 2>&1 & pid=$!; " +
                             WaitForLine("chief 0.*global_step/sec", log) + FindTaskPid("worker-1", "w") +
                             "kill -STOP $w; ended=0; for i in $(seq 1200); do kill -0 $pid 2>/dev/null || { ended=1; "
                             "break; }; sleep 0.1; done; [ $ended = 1 ] || { kill -KILL $pid $w; echo 'est-launch did "
                             "not exit within 120 s'; }; wait $pid; status=$?; cat " + log + "; exit $status)");
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(std::regex_search(run.output, std::regex(R"(\[chief 0\] .*rank 2 \('worker 2, pid \d+ on [^']+'\) of )"
                                                 R"(generation 1 has not beaten for 2\.\d+ s)")));
  CHECK(run.output.find("est-launch: worker 1 has not exited 3 s after the chief finished the training (it is "
                        "stopped): stopping it (SIGTERM, then SIGKILL after 3 s)") != std::string::npos);
  CHECK(run.output.find("est-launch: error") == std::string::npos);
  CHECK(LatestStep(dir) == 300);
}

TEST_CASE("--min-workers across hosts: a worker killed on node 1, the tasks of both hosts train on like 1 worker",
          "[apps][faults]") {
  // Two est-launch on loopback as two hosts: node 0 runs the chief and worker 0, node 1 worker
  // 1 (rank 2), killed after step 6. Node 0 counts the job's training tasks (2 left, its
  // --min-workers 2): no host stops, and the others re-form their group as on one host.
  const std::string reference = ElasticReference("faults_nodes_elastic_reference", "16");
  const fs::path crash_points = est::testing::FreshTempDir("faults_nodes_elastic_points");
  std::ofstream(crash_points / "worker-1@after_step@6").put('\n');
  const std::string dir = est::testing::FreshTempDir("faults_nodes_elastic").string();
  const fs::path logs = est::testing::FreshTempDir("faults_nodes_elastic_logs");
  // The rendezvous, then node 0's 2 ports, then node 1's.
  const int port = est_launch::FindFreePortRange("127.0.0.1", 4);
  const std::string node = "EST_CRASH_POINTS_DIR=" + crash_points.string() + " " + EST_LAUNCH_PATH +
                           " --nnodes 2 --rendezvous 127.0.0.1:" + std::to_string(port) + " --cpu-bind none ";
  const std::string train = " -- " + ElasticTrain(dir, "16", "8");
  RunResult run =
      RunCommand("(" + node + "--node-rank 0 --port " + std::to_string(port + 1) +
                 " --chief --workers 1 --min-workers 2" + train + " > " + (logs / "node0").string() +
                 " 2>&1 & p0=$!; " + node + "--node-rank 1 --port " + std::to_string(port + 3) + " --workers 1" +
                 train + " > " + (logs / "node1").string() + " 2>&1; s1=$?; wait $p0; s0=$?; cat " +
                 (logs / "node0").string() + " " + (logs / "node1").string() + "; echo \"exit statuses $s0 $s1\")");
  INFO(run.output);
  CHECK(run.output.find("exit statuses 0 0") != std::string::npos);
  CHECK(est::testing::CountEntries(crash_points) == 0);
  CHECK(run.output.find("est-launch: worker 1 was killed by SIGKILL; the job's other training tasks train on without "
                        "it while --min-workers 2 are left") != std::string::npos);
  CHECK(run.output.find("est-launch: node 1's worker 1 is lost; the job's 2 other training tasks train on without it "
                        "(--min-workers 2)") != std::string::npos);
  CHECK(std::regex_search(run.output, std::regex(R"(\[worker 0\] .*training on as worker 1 of 2 \(generation 2\))")));
  CHECK(CountOf(run.output, "6 logical shards; this worker reads 3 of them, going on with the 2 it read before") == 2);
  const std::string last = dir + "/model.ckpt-16";
  REQUIRE(est::checkpoint::LatestCheckpoint(dir) == last);
  CHECK(CheckpointRelativeDifference(last, reference) <= 1e-5);
}

TEST_CASE("across hosts with --min-workers: a host lost with its workers, the job trains on, and a new host joins it",
          "[apps][faults][skippable]") {
  // Node 1 runs in a mount namespace of its own, so that it is another host to the collectives,
  // which then share no memory with node 0's ranks nor watch their pids: as across hosts, only
  // the beats tell the chief that the rank its failed step did not name is gone.
  if (std::system("unshare --mount true > /dev/null 2>&1") != 0)
    EST_SKIP("node 1 needs a mount namespace of its own (unshare --mount, as root) to be another host");
  // Node 0 runs the chief and worker 0, node 1 workers 1 and 2 (ranks 2 and 3). Node 1's
  // est-launch is killed (SIGKILL) while the job trains, as when its host is gone: its workers
  // die with it. Node 0 counts them lost (2 left, --min-workers 2). The others' all-reduce names
  // one of the two; the chief forms the next generation without the other once it has missed
  // its beats, not after the 60 s timeout. Then a new est-launch in node 1's place joins the
  // running job: its 2 workers join the group as newcomers. SIGTERM to node 0 stops every task
  // at a step S, which equals 1 worker trained S steps.
  const std::string dir = est::testing::FreshTempDir("faults_host_lost").string();
  const fs::path logs = est::testing::FreshTempDir("faults_host_lost_logs");
  const std::string log0 = (logs / "node0").string();
  const std::string log1 = (logs / "node1").string();
  const std::string log2 = (logs / "node1_again").string();
  // The rendezvous, then node 0's 2 ports, then node 1's 2, then those of its replacement.
  const int port = est_launch::FindFreePortRange("127.0.0.1", 7);
  const std::string node = std::string(EST_LAUNCH_PATH) + " --nnodes 2 --rendezvous 127.0.0.1:" + std::to_string(port) +
                           " --cpu-bind none --grace-secs 20 ";
  const std::string train = " -- " + ElasticTrain(dir, "100000000", "100000") + " --log-step-count-steps 2";
  // Node 1, and its replacement, which waits for node 0 no longer than 60 s.
  const auto node1 = [&](int first_port) {
    return "unshare --mount " + node + "--node-rank 1 --port " + std::to_string(first_port) +
           " --workers 2 --rendezvous-timeout-secs 60" + train;
  };
  RunResult run = RunCommand(
      "(" + node + "--node-rank 0 --port " + std::to_string(port + 1) + " --chief --workers 1 --min-workers 2" + train +
      " > " + log0 + " 2>&1 & p0=$!; " + node1(port + 3) + " > " + log1 + " 2>&1 & p1=$!; " +
      WaitForLine("chief 0.*global_step/sec", log0) + "kill -KILL $p1; killed=$(date +%s%N); " +
      WaitForLine("worker 0.*training on as worker 1 of 2 (generation 2)", log0) +
      "echo \"re-formed in $(( ($(date +%s%N) - killed) / 1000000 )) ms\"; " + node1(port + 5) + " > " + log2 +
      " 2>&1 & p2=$!; for i in $(seq 1200); do [ $(grep -c " + "'going on with the 0 it read before' " + log2 +
      ") -ge 2 ] && break; sleep 0.05; done; sleep 0.5; " +
      "kill -TERM $p0; wait $p0; status=$?; wait $p1; wait $p2; cat " + log0 + " " + log1 + " " + log2 +
      "; exit $status)");
  INFO(run.output);
  REQUIRE(run.exit_code == 143);
  CHECK(std::regex_search(run.output,
                          std::regex(R"(est-launch: node 1's est-launch \(127\.0\.0\.1:\d+\) is gone: the connection )"
                                     R"(closed; its 2 worker\(s\) are lost, and the job's 2 other training tasks )"
                                     R"(train on without them \(--min-workers 2\))")));
  CHECK(
      std::regex_search(run.output, std::regex(R"(\[chief 0\] .*generation 1 of the training group lost rank [23])")));
  CHECK(std::regex_search(run.output,
                          std::regex(R"(\[chief 0\] .*Generation 2 of the training group forms without 'worker )"
                                     R"([23], pid \d+ on [^']+' of generation 1, which has not beaten for)")));
  CHECK(CountOf(run.output, "6 logical shards; this worker reads 3 of them, going on with the 2 it read before") == 2);
  std::smatch reformed;
  REQUIRE(std::regex_search(run.output, reformed, std::regex(R"(re-formed in (\d+) ms)")));
  CHECK(std::stoi(reformed[1]) < 30000);  // the beat lease (5 s) and the step's failure, well within the timeout
  // The new node 1's workers take indices 1 and 2 again and join as newcomers.
  CHECK(run.output.find(": worker 1, worker 2 join the training group, which has 4 training tasks with them") !=
        std::string::npos);
  CHECK(CountOf(run.output, "joins its group as a newcomer") == 2);
  CheckLikeOneWorker(dir, ChiefStoppedAt(run.output), "faults_host_lost_reference");
}

TEST_CASE("--min-workers across hosts: a host that stops answering is cut off after the beat lease, not the timeout",
          "[apps][faults]") {
  // Node 0 runs the chief and worker 0, node 1 workers 1 and 2 (ranks 2 and 3). Node 1's
  // est-launch and its workers are stopped (SIGSTOP) while the job trains: their connections
  // stay open and nothing closes them, as when a host hangs or its network drops its packets.
  // The chief finds ranks 2 and 3 silent for the beat lease (--beat-lease-secs 2) and cuts them
  // off: the step in flight fails on every other rank at once rather than at the 60 s timeout,
  // and the two left re-form the group without both, with no second lease to wait. Then node 1
  // is killed (its host never comes back): node 0 counts its workers lost. SIGTERM to node 0
  // stops the job at a step S, which equals 1 worker trained S steps.
  const std::string dir = est::testing::FreshTempDir("faults_host_silent").string();
  const fs::path logs = est::testing::FreshTempDir("faults_host_silent_logs");
  const std::string log0 = (logs / "node0").string();
  const std::string log1 = (logs / "node1").string();
  const int port = est_launch::FindFreePortRange("127.0.0.1", 4);
  const std::string node = std::string(EST_LAUNCH_PATH) + " --nnodes 2 --rendezvous 127.0.0.1:" + std::to_string(port) +
                           " --cpu-bind none --grace-secs 20 ";
  const std::string train =
      " -- " + ElasticTrain(dir, "100000000", "100000") + " --log-step-count-steps 2 --beat-lease-secs 2";
  // In a mount namespace of its own, node 1 is another host: the chief's connection to it is
  // Gloo's TCP, which the cut shuts down. Otherwise the three ranks share memory, where the cut
  // fails every waiting rank's call as well.
  const bool apart = std::system("unshare --mount true > /dev/null 2>&1") == 0;
  RunResult run = RunCommand(
      "(" + node + "--node-rank 0 --port " + std::to_string(port + 1) + " --chief --workers 1 --min-workers 2" + train +
      " > " + log0 + " 2>&1 & p0=$!; " + (apart ? "unshare --mount " : "") + node + "--node-rank 1 --port " +
      std::to_string(port + 3) + " --workers 2" + train + " > " + log1 + " 2>&1 & p1=$!; " +
      WaitForLine("chief 0.*global_step/sec", log0) + "pid=$p1; " + FindTaskPid("worker-1", "w1") +
      FindTaskPid("worker-2", "w2") + "kill -STOP $p1 $w1 $w2; stopped=$(date +%s%N); " +
      WaitForLine("worker 0.*training on as worker 1 of 2 (generation 2)", log0) +
      "echo \"re-formed in $(( ($(date +%s%N) - stopped) / 1000000 )) ms\"; kill -KILL $p1 $w1 $w2; " +
      WaitForLine("node 1.s est-launch .* is gone", log0) + "sleep 1; kill -TERM $p0; wait $p0; status=$?; cat " +
      log0 + " " + log1 + "; exit $status)");
  INFO(run.output);
  REQUIRE(run.exit_code == 143);
  for (const std::string rank : {"2", "3"})
    CHECK(std::regex_search(run.output, std::regex(R"(\[chief 0\] .*rank )" + rank + R"( \('worker )" + rank +
                                                   R"(, pid \d+ on [^']+'\) of generation 1 has not beaten for )"
                                                   R"(2\.\d+ s .*: cutting it off)")));
  CHECK(std::regex_search(run.output,
                          std::regex(R"(\[chief 0\] .*The step after global step \d+ failed: .*stopped beating)")));
  CHECK(std::regex_search(
      run.output, std::regex(R"(\[chief 0\] .*generation 1 of the training group lost rank 2, 3; re-forming)")));
  CHECK(CountOf(run.output, "6 logical shards; this worker reads 3 of them, going on with the 2 it read before") == 2);
  std::smatch reformed;
  REQUIRE(std::regex_search(run.output, reformed, std::regex(R"(re-formed in (\d+) ms)")));
  // The lease and a beat's interval, the failed step and the re-forming: far within the timeout.
  CHECK(std::stoi(reformed[1]) < 20000);
  CHECK(run.output.find("which has not beaten for") == std::string::npos);  // no second lease waited
  CheckLikeOneWorker(dir, ChiefStoppedAt(run.output), "faults_host_silent_reference");
}

TEST_CASE("--max-workers: a worker with another batch size is refused when it joins, and the group trains on",
          "[apps][faults]") {
  // As below, but the worker started by hand batches 48 examples a step where the job's batch
  // 96: it joins generation 2, finds its batches (8 examples a logical shard) unlike the
  // chief's (16), and exits with one error line before its first step; the others re-form
  // without it and train on, like 1 worker.
  const std::string dir = est::testing::FreshTempDir("faults_grow_batch").string();
  const fs::path logs = est::testing::FreshTempDir("faults_grow_batch_logs");
  const std::string launch_log = (logs / "launch").string();
  const std::string added_log = (logs / "added").string();
  const std::string train = ElasticTrain(dir, "100000000", "100000") + " --log-step-count-steps 2";
  std::string half_batch = train;
  half_batch.replace(half_batch.find("--batch-size 96"), 15, "--batch-size 48");
  RunResult run = RunCommand(
      "(" + LaunchAndAddWorker(logs, "faults-grow-batch-token", train, half_batch, launch_log, added_log, "; ") +
      "echo \"added worker exit status $?\"; " +
      WaitForLine("Training goes on from global step .* with 2 worker", launch_log) +
      "sleep 1; kill -TERM $pid; wait $pid; status=$?; cat " + launch_log + "; sed 's/^/[added] /' " + added_log +
      "; exit $status)");
  INFO(run.output);
  REQUIRE(run.exit_code == 143);
  CHECK(run.output.find("added worker exit status 1") != std::string::npos);
  CHECK(run.output.find("[added] est-train: error: this worker's batches hold 8 examples, the training group's 16 "
                        "(the chief's): every worker must batch alike") != std::string::npos);
  CHECK_FALSE(std::regex_search(run.output, std::regex(R"(\[added\] .*loss = )")));  // it took no step
  CheckLikeOneWorker(dir, ChiefStoppedAt(run.output), "faults_grow_batch_reference");
}

TEST_CASE("--max-workers: a worker started by hand beyond the cluster joins the running group", "[apps][faults]") {
  // est-launch runs a chief and 1 worker with --min-workers 2 --max-workers 3. Once they train,
  // a third est-train is started by hand, with the job's id and token and a TF_CONFIG whose
  // worker list holds one more task (index 1): it joins as a newcomer, the 6 logical shards are
  // dealt 2, 2 and 2, and SIGTERM to est-launch stops all three after the same step S, which
  // equals 1 worker trained S steps.
  const std::string dir = est::testing::FreshTempDir("faults_grow").string();
  const fs::path logs = est::testing::FreshTempDir("faults_grow_logs");
  const std::string launch_log = (logs / "launch").string();
  const std::string added_log = (logs / "added").string();
  const std::string train = ElasticTrain(dir, "100000000", "100000") + " --log-step-count-steps 2";
  RunResult run = RunCommand(
      "(" + LaunchAndAddWorker(logs, "faults-grow-token", train, train, launch_log, added_log, " & added=$!; ") +
      WaitForLine("going on with the 0 it read before", added_log) +
      "sleep 0.5; kill -TERM $pid; wait $pid; status=$?; wait $added; echo \"added worker exit status $?\"; cat " +
      launch_log + "; sed 's/^/[added] /' " + added_log + "; exit $status)");
  INFO(run.output);
  REQUIRE(run.exit_code == 143);
  CHECK(run.output.find("added worker exit status 143") != std::string::npos);
  CHECK(std::regex_search(run.output, std::regex(R"(\[added\] .*worker 2 of 3 joining job '[0-9a-f]+')")));
  CHECK(std::regex_search(run.output, std::regex(R"(\[added\] .*joins its group as a newcomer)")));
  CHECK(std::regex_search(run.output, std::regex(R"(\[chief 0\] .*a newcomer waits to join generation 1)")));
  CHECK(std::regex_search(
      run.output,
      std::regex(R"(\[added\] .*Generation 2 of the training group: 3 member\(s\); this one .* is rank 2)")));
  CHECK(CountOf(run.output, "6 logical shards; this worker reads 2 of them, going on with the 2 it read before") == 2);
  CHECK(std::regex_search(
      run.output, std::regex(R"(\[added\] .*6 logical shards; this worker reads 2 of them, going on with the 0)")));
  CheckLikeOneWorker(dir, ChiefStoppedAt(run.output), "faults_grow_reference");
}

TEST_CASE("--max-workers: the logical input shards are one per worker of the largest group, and no fewer",
          "[apps][faults]") {
  const std::string dir = est::testing::FreshTempDir("faults_max_shards").string();
  const std::string launch = std::string(EST_LAUNCH_PATH) + " --chief --workers 1 --min-workers 2 --max-workers 3 -- " +
                             EST_TRAIN_PATH +
                             " --model linear --strategy multi_worker --max-steps 2 --batch-size 96 --model-dir " + dir;
  RunResult run = RunCommand(launch);
  INFO(run.output);
  CHECK(run.exit_code == 0);
  CHECK(CountOf(run.output, "Training input: 3 logical shards") == 2);
  RunResult too_few = RunCommand(launch + "_few --logical-input-shards 2");
  INFO(too_few.output);
  CHECK(too_few.exit_code == 1);
  CHECK(too_few.output.find("the training input is read as 2 logical shards, fewer than the 3 workers that step "
                            "together or that the group may grow to (max_workers)") != std::string::npos);
}

TEST_CASE("--min-workers: two workers killed at once, the other two train on like 1 worker", "[apps][faults]") {
  // A chief and 3 workers; workers 1 and 2 (ranks 2 and 3) die after the same step. The
  // survivors' all-reduce names the first loss; the chief stops waiting for the second once its
  // process has exited, not after the 60 s timeout. Shards 0-5 were held 2, 2, 1, 1: each
  // survivor takes one of the lost ones.
  const std::string reference = ElasticReference("faults_two_lost_reference", "16");
  const fs::path crash_points = est::testing::FreshTempDir("faults_two_lost_points");
  std::ofstream(crash_points / "worker-1@after_step@6").put('\n');
  std::ofstream(crash_points / "worker-2@after_step@6").put('\n');
  const std::string dir = est::testing::FreshTempDir("faults_two_lost").string();
  const auto start = std::chrono::steady_clock::now();
  RunResult run = RunCommand("EST_CRASH_POINTS_DIR=" + crash_points.string() + " " + EST_LAUNCH_PATH +
                             " --chief --workers 3 --min-workers 2 -- " + ElasticTrain(dir, "16", "8"));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(est::testing::CountEntries(crash_points) == 0);
  CHECK(CountOf(run.output, " was killed by SIGKILL; the ") == 2);
  CHECK(std::regex_search(run.output, std::regex(R"(\[worker 0\] .*training on as worker 1 of 2 \(generation 2\))")));
  CHECK(CountOf(run.output, "6 logical shards; this worker reads 3 of them, going on with the 2 it read before") == 2);
  CHECK(CountOf(run.output, "Training goes on from global step 6 (the chief's) with 2 worker(s)") == 2);
  CHECK(seconds < 50);
  const std::string last = dir + "/model.ckpt-16";
  REQUIRE(est::checkpoint::LatestCheckpoint(dir) == last);
  CHECK(CheckpointRelativeDifference(last, reference) <= 1e-5);
}

TEST_CASE("--min-workers: the chief killed mid-run ends the group; --max-restarts restarts the job from its checkpoint",
          "[apps][faults]") {
  // The chief's store holds the training group, so its loss cannot be recovered in the job:
  // est-launch stops the workers and restarts every task, which resume from model.ckpt-4 (the
  // chief was killed once that checkpoint was complete: a kill at a step could come before the
  // background save of an earlier one ended) and end as 1 worker reading all 6 shards would.
  const std::string reference = ElasticReference("faults_chief_lost_reference", "16");
  const fs::path crash_points = est::testing::FreshTempDir("faults_chief_lost_points");
  std::ofstream(crash_points / "chief-0@checkpoint_retention@4").put('\n');
  const std::string dir = est::testing::FreshTempDir("faults_chief_lost").string();
  RunResult run = RunCommand("EST_CRASH_POINTS_DIR=" + crash_points.string() + " " + EST_LAUNCH_PATH +
                             " --chief --workers 2 --min-workers 2 --max-restarts 1 --restart-backoff-secs 0 -- " +
                             ElasticTrain(dir, "16", "4"));
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(est::testing::CountEntries(crash_points) == 0);
  CHECK(run.output.find("est-launch: chief 0 was killed by SIGKILL; stopping the other tasks") != std::string::npos);
  CHECK(run.output.find("restarting every task in 0 s (restart 1 of at most 1)") != std::string::npos);
  CHECK(run.output.find("Training goes on from global step") == std::string::npos);  // no group without the chief
  CHECK(std::regex_search(run.output, std::regex(R"(\[chief 0\] .*Restoring parameters from .*model\.ckpt-4)")));
  const std::string last = dir + "/model.ckpt-16";
  REQUIRE(est::checkpoint::LatestCheckpoint(dir) == last);
  CHECK(CheckpointRelativeDifference(last, reference) <= 1e-5);
}

TEST_CASE("--min-workers with --max-restarts: a killed worker's replacement joins the running group by broadcast",
          "[apps][faults]") {
  // --min-workers 3 of 3: the 2 left wait for the replacement, which est-launch starts alone.
  // It joins generation 2 as a newcomer and takes the chief's variables, optimizer state, step
  // and input position over the collectives; the 6 logical shards are dealt 2, 2 and 2, the
  // survivors going on with theirs. Every global step still reads one batch of every shard:
  // the job equals 1 worker reading all 6, up to float32 rounding.
  const std::string reference = ElasticReference("faults_replacement_reference", "16");

  const fs::path crash_points = est::testing::FreshTempDir("faults_replacement_points");
  std::ofstream(crash_points / "worker-1@after_step@6").put('\n');
  const std::string dir = est::testing::FreshTempDir("faults_replacement").string();
  RunResult run = RunCommand("EST_CRASH_POINTS_DIR=" + crash_points.string() + " " + EST_LAUNCH_PATH +
                             " --chief --workers 2 --min-workers 3 --max-restarts 1 --restart-backoff-secs 0 -- " +
                             ElasticTrain(dir, "16", "8"));
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(est::testing::CountEntries(crash_points) == 0);
  CHECK(run.output.find("est-launch: worker 1 was killed by SIGKILL; restarting it alone in 0 s (restart 1 of at "
                        "most 1; the 2 other training tasks wait for it to join them, as they are fewer than "
                        "--min-workers 3)") != std::string::npos);
  CHECK(std::regex_search(run.output, std::regex(R"(\[worker 1\] .*joins its group as a newcomer)")));
  CHECK(std::regex_search(run.output, std::regex(R"(\[chief 0\] .*generation 1 of the training group lost rank 2)")));
  CHECK(std::regex_search(run.output, std::regex(R"(\[worker 0\] .*training on as worker 1 of 3 \(generation 2\))")));
  CHECK(std::regex_search(
      run.output,
      std::regex(R"(\[worker 1\] .*Generation 2 of the training group: 3 member\(s\); this one .* is rank 2)")));
  // The step the worker was killed after (6) is where the group goes on: none lost, none twice.
  CHECK(CountOf(run.output, "Training goes on from global step 6 (the chief's) with 3 worker(s)") == 3);
  CHECK(CountOf(run.output, "6 logical shards; this worker reads 2 of them, going on with the 2 it read before") == 2);
  CHECK(std::regex_search(
      run.output, std::regex(R"(\[worker 1\] .*6 logical shards; this worker reads 2 of them, going on with the 0)")));
  const std::string last = dir + "/model.ckpt-16";
  REQUIRE(est::checkpoint::LatestCheckpoint(dir) == last);
  CHECK(CheckpointRelativeDifference(last, reference) <= 1e-5);
}

TEST_CASE("--min-workers with --max-restarts: the group shrinks, then grows again when the replacement arrives",
          "[apps][faults]") {
  // --min-workers 2 of 3: the 2 left train on (generation 2) while est-launch starts the
  // replacement; the chief sees it waiting between two steps, and every worker admits it after
  // the same step (generation 3). SIGTERM then stops the job at a step S, saved; 1 worker
  // reading the 6 shards for S steps learns the same, up to float32 rounding.
  const fs::path crash_points = est::testing::FreshTempDir("faults_regrow_points");
  std::ofstream(crash_points / "worker-1@after_step@6").put('\n');
  const std::string dir = est::testing::FreshTempDir("faults_regrow").string();
  const std::string log = (est::testing::FreshTempDir("faults_regrow_log") / "output").string();
  const std::string launch = "EST_CRASH_POINTS_DIR=" + crash_points.string() + " " + EST_LAUNCH_PATH +
                             " --chief --workers 2 --min-workers 2 --max-restarts 1 --restart-backoff-secs 0 -- " +
                             ElasticTrain(dir, "100000000", "100000");
  // SIGTERM once the replacement (the one worker that goes on with none of its shards) has
  // joined, and trained with the others for a while.
  RunResult run = RunUntilThenStop(launch, log, "grep -q 'going on with the 0 it read before' " + log);
  INFO(run.output);
  REQUIRE(run.exit_code == 143);
  CHECK(est::testing::CountEntries(crash_points) == 0);
  CHECK(run.output.find("est-launch: worker 1 was killed by SIGKILL; restarting it alone in 0 s (restart 1 of at "
                        "most 1; the 2 other training tasks train on without it until it joins them (--min-workers "
                        "2))") != std::string::npos);
  CHECK(std::regex_search(run.output, std::regex(R"(\[worker 0\] .*training on as worker 1 of 2 \(generation 2\))")));
  CHECK(std::regex_search(run.output, std::regex(R"(\[chief 0\] .*a newcomer waits to join generation 2)")));
  CHECK(std::regex_search(run.output, std::regex(R"(\[worker 0\] .*training on as worker 1 of 3 \(generation 3\))")));
  // Shrinking: each survivor takes one of the lost worker's shards; growing: each gives one.
  CHECK(CountOf(run.output, "6 logical shards; this worker reads 3 of them, going on with the 2 it read before") == 2);
  CHECK(CountOf(run.output, "6 logical shards; this worker reads 2 of them, going on with the 2 it read before") == 2);
  const std::string step = ChiefStoppedAt(run.output);
  CHECK(run.output.find("[worker 1] est-train: training stopped by SIGTERM at global step " + step) !=
        std::string::npos);
  CheckLikeOneWorker(dir, step, "faults_regrow_reference");
}

TEST_CASE("--min-workers with --max-restarts: workers killed at random steps, each replaced in the running job",
          "[apps][faults]") {
  // A chief and 2 workers, --min-workers 2: 3 kills of a worker at random steps, each worker
  // started again alone and joining the group (at once, or after the others shrank, or when
  // both were lost, with the chief waiting for one). Every step reads one batch of each of the 6
  // shards whatever the membership history, so the job stopped at step S equals 1 worker
  // trained S steps, up to float32 rounding.
  const uint32_t seed = FaultsSeed();
  INFO("EST_FAULTS_SEED=" << seed << " repeats these faults");
  std::mt19937 random(seed);
  const fs::path crash_points = est::testing::FreshTempDir("faults_random_replace_points");
  std::string listed;
  for (int kill = 0; kill < 3; ++kill) {
    const std::string fault = "worker-" + std::to_string(std::uniform_int_distribution<int>(0, 1)(random)) +
                              "@after_step@" +
                              std::to_string(4 + 12 * kill + std::uniform_int_distribution<int>(0, 11)(random)) + "+";
    std::ofstream(crash_points / fault).put('\n');
    listed += fault + " ";
  }
  INFO("faults: " << listed);
  const std::string dir = est::testing::FreshTempDir("faults_random_replace").string();
  const std::string log = (est::testing::FreshTempDir("faults_random_replace_log") / "output").string();
  const std::string launch = "EST_CRASH_POINTS_DIR=" + crash_points.string() + " " + EST_LAUNCH_PATH +
                             " --chief --workers 2 --min-workers 2 --max-restarts 3 --restart-backoff-secs 0 -- " +
                             ElasticTrain(dir, "100000000", "100000");
  // Every replacement goes on with none of its shards: SIGTERM once all 3 have joined.
  RunResult run =
      RunUntilThenStop(launch, log, "[ \"$(grep -c 'going on with the 0 it read before' " + log + ")\" = 3 ]");
  INFO(run.output);
  REQUIRE(run.exit_code == 143);
  CHECK(est::testing::CountEntries(crash_points) == 0);
  CHECK(CountOf(run.output, " was killed by SIGKILL; restarting it alone in 0 s") == 3);
  CHECK(CountOf(run.output, "joins its group as a newcomer") == 3);
  const std::string step = ChiefStoppedAt(run.output);
  CheckLikeOneWorker(dir, step, "faults_random_replace_reference");
}
