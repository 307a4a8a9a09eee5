// est-train under a real Slurm (Debian's slurm-wlm 22.05): a private slurmctld and slurmd on
// this machine (tests/slurm/local_slurm.sh), jobs submitted with sbatch whose steps srun
// starts. Each task finds its place in Slurm's variables (SlurmClusterResolver). The last
// tests use a Slurm of two nodes, each a simulated host with its own host name and address.


#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/checkpoint_state.h"
#include "common/file_util.h"
#include "tests/apps/run_command.h"
#include "tests/checkpoint_difference.h"
#include "tests/loopback.h"
#include "tests/test_util.h"
#include "tests/skip.h"

namespace slurm_test {
namespace {

using est::testing::RunCommand;
using est::testing::RunResult;
using est::testing::Contains;
using est::testing::LinesStartingWith;
namespace fs = std::filesystem;

// Stops the Slurms that runs of this program killed before their end left, daemons, jobs and
// simulated hosts (their directories, est-slurm-PID-NODES, name a process that is gone).
void StopLeftSlurms() {
  const std::regex name(R"(est-slurm-(\d+)(-\d+)?)");
  std::error_code ignored;
  for (const fs::directory_entry& entry : fs::directory_iterator(fs::temp_directory_path(), ignored)) {
    const std::string file = entry.path().filename().string();
    std::smatch match;
    if (!std::regex_match(file, match, name) || fs::exists("/proc/" + match[1].str())) continue;
    RunCommand("bash " LOCAL_SLURM_SCRIPT " stop " + entry.path().string());
    fs::remove_all(entry.path(), ignored);
  }
}

// A private Slurm of this test program: started at its first use, stopped at exit.
class LocalSlurm {
 public:
  // One node, this host.
  static const LocalSlurm& OneNode() {
    static LocalSlurm slurm(1);
    return slurm;
  }
  // Two nodes, node1 and node2, each a simulated host (a network namespace) of its own.
  static const LocalSlurm& TwoNodes() {
    static LocalSlurm slurm(2);
    return slurm;
  }

  // "" when Slurm is up, else why the tests skip.
  const std::string& skip_reason() const { return skip_reason_; }
  // Its SLURM_CONF.
  const std::string& conf() const { return conf_; }

 private:
  // Its own directory, not FreshTempDir's, which may be removed before the daemons stop.
  explicit LocalSlurm(int nodes)
      : dir_((fs::temp_directory_path() / ("est-slurm-" + std::to_string(::getpid()) + "-" + std::to_string(nodes)))
                 .string()) {
    StopLeftSlurms();
    const RunResult started = RunCommand("bash " LOCAL_SLURM_SCRIPT " start " + dir_ + " " + std::to_string(nodes));
    if (started.exit_code == 77) {
      skip_reason_ = started.output;
      return;
    }
    INFO(started.output);
    REQUIRE(started.exit_code == 0);
    // The last line: a start that tried again says so first.
    std::string output = started.output;
    while (!output.empty() && output.back() == '\n') output.pop_back();
    conf_ = output.substr(output.rfind('\n') + 1);
  }
  ~LocalSlurm() {
    if (!skip_reason_.empty()) return;
    // std::system, not RunCommand: Catch has shut down when statics are destroyed.
    const int stopped = std::system(("bash " LOCAL_SLURM_SCRIPT " stop " + dir_ + " >/dev/null 2>&1").c_str());
    (void)stopped;
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  std::string dir_;
  std::string conf_;
  std::string skip_reason_;
};

// Writes a batch script of `body` under `dir` and submits it; returns the job id.
std::string Submit(const std::string& dir, const std::string& sbatch_flags, const std::string& body) {
  const std::string script = dir + "/job.sh";
  std::ofstream(script) << "#!/bin/bash\n" << body;
  const RunResult submitted = RunCommand("sbatch --parsable --chdir=" + dir + " --output=" + dir +
                                         "/job.out --open-mode=append " + sbatch_flags + " " + script);
  INFO(submitted.output);
  REQUIRE(submitted.exit_code == 0);
  return submitted.output.substr(0, submitted.output.find_first_of(";\n"));
}

// squeue's "STATE REASON" of the job; "" once it has left the queue.
std::string JobState(const std::string& job) {
  const std::string state = RunCommand("squeue --noheader --jobs=" + job + " --format='%T %r' 2>/dev/null").output;
  return state.substr(0, state.find('\n'));
}

// Waits until the job leaves the queue. A requeued job waits for a begin time Slurm sets about
// two minutes ahead; the test starts it at once, as an administrator would.
void WaitForJobEnd(const std::string& job, std::chrono::seconds limit = std::chrono::seconds(240)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (std::string state = JobState(job); !state.empty(); state = JobState(job)) {
    if (std::chrono::steady_clock::now() > deadline) {
      RunCommand("scancel --signal=KILL " + job);
      FAIL("job " << job << " still queued or running after " << limit.count() << " s: " << state);
    }
    if (Contains(state, "PENDING BeginTime")) RunCommand("scontrol update JobId=" + job + " StartTime=now");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

// Waits until `file` holds `text`.
void WaitForText(const std::string& file, const std::string& text, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!fs::exists(file) || !Contains(est::ReadFile(file), text)) {
    if (std::chrono::steady_clock::now() > deadline) {
      FAIL("'" << text << "' not in " << file << " after " << limit.count() << " s:\n"
               << (fs::exists(file) ? est::ReadFile(file) : std::string("(no file)")));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

// The lines of task `task` in srun --label's output.
std::string TaskLines(const std::string& output, int task) {
  return LinesStartingWith(output, std::to_string(task) + ": ");
}

// The global step of the latest checkpoint in `model_dir`: the one it holds, which its name shows too.
int64_t LatestStep(const std::string& model_dir) {
  const std::optional<std::string> latest = est::checkpoint::LatestCheckpoint(model_dir);
  REQUIRE(latest.has_value());
  const int64_t step = est::checkpoint::CheckpointReader(*latest).global_step();
  CHECK(*latest == model_dir + "/model.ckpt-" + std::to_string(step));
  return step;
}


// Skips the test case, saying why, where `slurm` (a LocalSlurm) cannot run here; else points
// the test's Slurm commands at it (SLURM_CONF).
#define USE_SLURM(slurm)                                  \
  if (!(slurm).skip_reason().empty()) {                   \
    EST_SKIP((slurm).skip_reason());                      \
  }                                                       \
  ::setenv("SLURM_CONF", (slurm).conf().c_str(), 1)

// A port of its own for each job: ctest runs other clusters beside this one.
std::string MasterPort() { return "--export=ALL,MASTER_PORT=" + std::to_string(est::testing::FreePort()); }

}  // namespace

TEST_CASE("examples/slurm/train.sbatch: two srun tasks train the CNN, the chief alone writes, and an evaluator "
          "step follows", "[apps][cluster][slurm][skippable]") {
  USE_SLURM(LocalSlurm::OneNode());
  const std::string dir = est::testing::FreshTempDir("slurm_cnn").string();
  // The example's own script, on this one node with 3 tasks, its flags from the environment.
  const RunResult submitted = RunCommand(
      "MODEL_DIR=" + dir + "/model EST_TRAIN=" + EST_TRAIN_PATH +
      " EST_TRAIN_FLAGS='--model fashion_mnist_cnn --max-steps 20 --batch-size 32 --save-checkpoints-steps 10 "
      "--eval-steps 2 --log-step-count-steps 10 --seed 7 --timeout-secs 120' sbatch --parsable --nodes=1 --ntasks=3 "
      "--cpus-per-task=1 --time=10 --chdir=" + dir + " --output=" + dir + "/job.out " + MasterPort() + " " +
      EXAMPLE_SBATCH_SCRIPT);
  INFO(submitted.output);
  REQUIRE(submitted.exit_code == 0);
  const std::string job = submitted.output.substr(0, submitted.output.find_first_of(";\n"));
  WaitForJobEnd(job);
  const std::string output = est::ReadFile(dir + "/job.out");
  const std::string evaluator = est::ReadFile(dir + "/evaluator-" + job + ".out");
  INFO(output << "\nThe evaluator:\n" << evaluator);
  CHECK(Contains(TaskLines(output, 0), "Cluster configuration from slurm: task worker:0, rank 0 of 2 (chief)"));
  CHECK(Contains(TaskLines(output, 1), "Cluster configuration from slurm: task worker:1, rank 1 of 2"));
  CHECK(Contains(TaskLines(output, 0), "Saving checkpoints for 20"));
  CHECK_FALSE(Contains(TaskLines(output, 1), "Saving checkpoints"));
  CHECK(LatestStep(dir + "/model") == 20);
  // The evaluator step is outside the training group and evaluated up to the last checkpoint.
  CHECK(Contains(evaluator, "--evaluator: running as the evaluator task, not as worker 0 of the cluster from slurm"));
  CHECK(Contains(evaluator, "Saving dict for global step 20"));
  CHECK(Contains(evaluator, "Exiting evaluation, global step 20 >= train max_steps 20"));
  CHECK(fs::is_directory(dir + "/model/eval"));
}

TEST_CASE("sbatch: four srun tasks end with est-launch's four workers' checkpoint, bit for bit, at the job's port",
          "[apps][cluster][slurm][skippable]") {
  USE_SLURM(LocalSlurm::OneNode());
  const std::string train = " --model linear --strategy multi_worker --max-steps 20 --save-checkpoints-steps 10 "
                            "--timeout-secs 120 --model-dir ";
  const std::string dir = est::testing::FreshTempDir("slurm_4").string();
  // No MASTER_PORT: the chief listens at 15000 + the job id's last four digits.
  const std::string job =
      Submit(dir, "--ntasks=4", "srun --label " + std::string(EST_TRAIN_PATH) + train + dir + "/model\n");
  WaitForJobEnd(job);
  const std::string output = est::ReadFile(dir + "/job.out");
  INFO(output);
  const int port = 15000 + std::stoi(job) % 10000;
  for (int task = 0; task < 4; ++task) {
    INFO("task " << task);
    CHECK(Contains(TaskLines(output, task), "task worker:" + std::to_string(task) + ", rank " + std::to_string(task) +
                                                " of 4"));
    CHECK(Contains(TaskLines(output, task), ":" + std::to_string(port) + " (slurm)"));
  }
  REQUIRE(LatestStep(dir + "/model") == 20);

  const std::string launch_dir = est::testing::FreshTempDir("slurm_4_launch").string();
  const RunResult launch = RunCommand(std::string(EST_LAUNCH_PATH) + " --workers 4 -- " + EST_TRAIN_PATH + train + launch_dir);
  INFO(launch.output);
  REQUIRE(launch.exit_code == 0);
  CHECK(est::testing::CheckpointDifference(dir + "/model/model.ckpt-20", launch_dir + "/model.ckpt-20") == "");
}

TEST_CASE("scancel stops both tasks after one step with the chief's checkpoint, and a resubmitted job resumes from it",
          "[apps][cluster][slurm][skippable]") {
  USE_SLURM(LocalSlurm::OneNode());
  const std::string dir = est::testing::FreshTempDir("slurm_scancel").string();
  // Each task writes its own file (slurmstepd does, so the lines after scancel are kept: srun
  // itself stops relaying output when the job is cancelled).
  const std::string body = "srun --output=task-%j-%t.out " + std::string(EST_TRAIN_PATH) +
                           " --model linear --strategy multi_worker --model-dir " + dir + "/model "
                           "--save-checkpoints-steps 1000000 --log-step-count-steps 100 --timeout-secs 120 "
                           "--max-steps ";
  const std::string first = Submit(dir, "--ntasks=2 " + MasterPort(), body + "1000000000\n");
  const std::string chief_file = dir + "/task-" + first + "-0.out";
  WaitForText(chief_file, "global_step/sec", std::chrono::seconds(120));
  REQUIRE(RunCommand("scancel " + first).exit_code == 0);
  WaitForJobEnd(first);
  const std::string chief = est::ReadFile(chief_file);
  const std::string worker = est::ReadFile(dir + "/task-" + first + "-1.out");
  INFO("the chief:\n" << chief << "\nthe worker:\n" << worker);
  // Slurm's SIGTERM reached both tasks; they stopped after the same step and the chief saved it.
  const std::regex stop(R"(Stopping at global step (\d+): received SIGTERM)");
  std::smatch match;
  REQUIRE(std::regex_search(chief, match, stop));
  const int64_t stopped = std::stoll(match[1]);
  CHECK(Contains(worker, "Stopping at global step " + std::to_string(stopped) + ": received SIGTERM"));
  CHECK(Contains(chief, "est-train: training stopped by SIGTERM at global step " + std::to_string(stopped) +
                            "; saved a checkpoint"));
  REQUIRE(LatestStep(dir + "/model") == stopped);

  const std::string second = Submit(dir, "--ntasks=2 " + MasterPort(), body + std::to_string(stopped + 50) + "\n");
  WaitForJobEnd(second);
  for (int task = 0; task < 2; ++task) {
    const std::string output = est::ReadFile(dir + "/task-" + second + "-" + std::to_string(task) + ".out");
    INFO("task " << task << ":\n" << output);
    CHECK(Contains(output, "Restoring parameters from " + dir + "/model/model.ckpt-" + std::to_string(stopped)));
  }
  CHECK(LatestStep(dir + "/model") == stopped + 50);
}

TEST_CASE("preemption: Slurm's SIGTERM to the steps gives a checkpoint, and the --requeue'd job continues from it",
          "[apps][cluster][slurm][skippable]") {
  USE_SLURM(LocalSlurm::OneNode());
  const std::string dir = est::testing::FreshTempDir("slurm_requeue").string();
  // The first run trains until the signal and requeues itself, as examples/slurm/train.sbatch
  // does; the second trains 50 steps past the checkpoint. The signal is sent as --signal=TERM@N
  // sends it (to the job's steps, not the batch script), once training runs: the moment Slurm
  // picks for --signal depends on its periodic check of time limits, and a task still loading
  // LibTorch has nothing to save.
  const std::string job = Submit(
      dir, "--ntasks=2 --requeue " + MasterPort(),
      "steps=1000000000\n"
      "if [ \"${SLURM_RESTART_COUNT:-0}\" -gt 0 ]; then\n"
      "  steps=$(( $(sed -n 's/^model_checkpoint_path: \"model.ckpt-\\([0-9]*\\)\"$/\\1/p' model/checkpoint) + 50 ))\n"
      "fi\n"
      "srun --label " + std::string(EST_TRAIN_PATH) + " --model linear --strategy multi_worker --model-dir " + dir +
      "/model --save-checkpoints-steps 1000000 --log-step-count-steps 1000 --timeout-secs 120 --max-steps $steps\n"
      "status=$?\n"
      "echo \"restart ${SLURM_RESTART_COUNT:-0} exited $status\"\n"
      "if [ $status -eq 143 ]; then scontrol requeue \"$SLURM_JOB_ID\"; fi\n"
      "exit $status\n");
  WaitForText(dir + "/job.out", "global_step/sec", std::chrono::seconds(120));
  REQUIRE(RunCommand("scancel --signal=TERM " + job).exit_code == 0);
  WaitForJobEnd(job);
  const std::string output = est::ReadFile(dir + "/job.out");
  INFO(output);
  const std::regex stop(R"(0: .*Stopping at global step (\d+): received SIGTERM)");
  std::smatch match;
  REQUIRE(std::regex_search(output, match, stop));
  const std::string stopped = match[1];
  CHECK(Contains(TaskLines(output, 1), "Stopping at global step " + stopped + ": received SIGTERM"));
  CHECK(Contains(output, "restart 0 exited 143"));
  CHECK(Contains(output, "restart 1 exited 0"));
  CHECK(Contains(TaskLines(output, 0), "Restoring parameters from " + dir + "/model/model.ckpt-" + stopped));
  CHECK(LatestStep(dir + "/model") == std::stoll(stopped) + 50);
}

TEST_CASE("two nodes: sbatch --nodes=2 runs est-train with srun on node1 and node2, and the chief, on node1, "
          "alone writes",
          "[apps][cluster][slurm][skippable]") {
  USE_SLURM(LocalSlurm::TwoNodes());
  const std::string dir = est::testing::FreshTempDir("slurm_two_nodes").string();
  // Each task says where it runs, then becomes est-train. No MASTER_PORT: the chief listens at
  // node1:15000 + the job id's last four digits, on a host of its own.
  const std::string job =
      Submit(dir, "--nodes=2 --ntasks=2 --time=5",
             "echo \"the batch script on $(hostname)\"\n"
             "srun --label bash -c 'echo \"host $(hostname), step nodes $SLURM_NODELIST, job nodes "
             "$SLURM_JOB_NODELIST\"; exec \"$0\" \"$@\"' " + std::string(EST_TRAIN_PATH) +
                 " --model linear --strategy multi_worker --max-steps 30 --save-checkpoints-steps 10 "
                 "--log-step-count-steps 10 --timeout-secs 60 --model-dir " + dir + "/model\n");
  WaitForJobEnd(job, std::chrono::seconds(120));
  const std::string output = est::ReadFile(dir + "/job.out");
  INFO(output);
  CHECK(Contains(output, "the batch script on node1"));
  CHECK(Contains(TaskLines(output, 0), "host node1, step nodes node[1-2], job nodes node[1-2]"));
  CHECK(Contains(TaskLines(output, 1), "host node2, step nodes node[1-2], job nodes node[1-2]"));
  // The first node of the list is the chief's host; node2 reached it by name.
  const std::string chief = "chief at node1:" + std::to_string(15000 + std::stoi(job) % 10000);
  CHECK(Contains(TaskLines(output, 0),
                 "Cluster configuration from slurm: task worker:0, rank 0 of 2 (chief), " + chief));
  CHECK(Contains(TaskLines(output, 1), "Cluster configuration from slurm: task worker:1, rank 1 of 2, " + chief));
  CHECK(Contains(TaskLines(output, 1), "MultiWorkerMirroredStrategy: all 2 workers connected"));
  CHECK(Contains(TaskLines(output, 0), "Saving checkpoints for 30 into " + dir + "/model/model.ckpt"));
  CHECK_FALSE(Contains(TaskLines(output, 1), "Saving checkpoints"));
  CHECK(LatestStep(dir + "/model") == 30);
}

TEST_CASE("two nodes: Slurm's own --signal=TERM@20 before a one-minute limit gives a checkpoint, and the job, "
          "requeued by its script, resumes from it", "[apps][cluster][slurm][skippable]") {
  USE_SLURM(LocalSlurm::TwoNodes());
  const std::string dir = est::testing::FreshTempDir("slurm_time_limit").string();
  // Nothing here signals the job: slurmctld sends SIGTERM to its steps at its first check of
  // time limits (every 30 s) once the end is less than 20 + 30 s away, so 10 to 40 s after the
  // start, while training runs and before the limit. The first run then requeues itself (exit
  // status 143), as examples/slurm/train.sbatch does; the second (SLURM_RESTART_COUNT=1) trains
  // 50 steps past the checkpoint.
  const std::string job = Submit(
      dir, "--nodes=2 --ntasks=2 --time=1 --signal=TERM@20 --requeue",
      "steps=1000000000\n"
      "if [ \"${SLURM_RESTART_COUNT:-0}\" -gt 0 ]; then\n"
      "  steps=$(( $(sed -n 's/^model_checkpoint_path: \"model.ckpt-\\([0-9]*\\)\"$/\\1/p' model/checkpoint) + 50 ))\n"
      "fi\n"
      "srun --label " + std::string(EST_TRAIN_PATH) + " --model linear --strategy multi_worker --model-dir " + dir +
      "/model --save-checkpoints-steps 1000000 --log-step-count-steps 1000 --timeout-secs 60 --max-steps $steps\n"
      "status=$?\n"
      "echo \"SLURM_RESTART_COUNT=${SLURM_RESTART_COUNT:-0}: srun exited $status after $SECONDS s\"\n"
      "if [ $status -eq 143 ]; then scontrol requeue \"$SLURM_JOB_ID\"; fi\n"
      "exit $status\n");
  WaitForJobEnd(job, std::chrono::seconds(180));
  const std::string output = est::ReadFile(dir + "/job.out");
  INFO(output);
  // Both tasks, one on each node, stopped after the same step; the chief saved it.
  std::smatch match;
  REQUIRE(std::regex_search(output, match, std::regex(R"((?:^|\n)0: .*Stopping at global step (\d+): )")));
  const std::string stopped = match[1];
  CHECK(Contains(output, "Stopping at global step " + stopped + ": received SIGTERM"));
  CHECK(Contains(TaskLines(output, 1), "Stopping at global step " + stopped + ": "));
  CHECK(Contains(TaskLines(output, 0), "est-train: training stopped by SIGTERM at global step " + stopped +
                                           "; saved a checkpoint"));
  // The signal came before the limit (the limit's own SIGTERM would come at 60 s).
  REQUIRE(std::regex_search(output, match, std::regex(R"(SLURM_RESTART_COUNT=0: srun exited 143 after (\d+) s)")));
  CHECK(std::stoi(match[1]) < 60);
  // Slurm started the job again, and both tasks restored the checkpoint.
  CHECK(Contains(output, "SLURM_RESTART_COUNT=1: srun exited 0"));
  for (int task = 0; task < 2; ++task) {
    INFO("task " << task);
    CHECK(Contains(TaskLines(output, task), "Restoring parameters from " + dir + "/model/model.ckpt-" + stopped));
  }
  CHECK(LatestStep(dir + "/model") == std::stoll(stopped) + 50);
  const std::string record = RunCommand("scontrol show job " + job).output;
  INFO(record);
  CHECK(Contains(record, "JobState=COMPLETED"));
  CHECK(Contains(record, "Restarts=1"));
}

}  // namespace slurm_test
