// Clusters of processes on loopback: est-launch starting est-train with TF_CONFIG.

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <tuple>

#include "checkpoint/checkpoint_state.h"
#include "common/file_util.h"
#include "estimator/summary/event_reader.h"
#include "tests/apps/run_command.h"
#include "tests/test_util.h"
#include "tests/tls_certificates.h"

using est::testing::RunCommand;
using est::testing::RunResult;
using est::testing::Contains;
using est::testing::LinesStartingWith;

namespace {

std::string EstTrain() { return EST_TRAIN_PATH; }

// The validation loss (nats a byte) est-train's transformer_lm stays below after 40 steps of 2
// workers at a global batch of 32: under the entropy of the text's bytes (3.32 nats), which is
// all a model that knows only how often each byte comes can reach. PyTorch DDP training the same
// model the same way (apps/bench/lm_ddp_peer.py) reached 3.00.
constexpr double kLmLossAfter40Steps = 3.2;

// One est-train task of `tf_config` with `args`, alone (its peers never start), for at most 60 s.
RunResult RunLoneTask(const std::string& tf_config, const std::string& args) {
  return RunCommand("TF_CONFIG='" + tf_config + "' timeout 60 " + EstTrain() + " " + args);
}

}  // namespace

TEST_CASE("two workers and an evaluator: the tutorial's cluster trains, evaluates, stops and resumes", "[apps][cluster]") {
  const std::string dir = est::testing::FreshTempDir("cluster_tutorial").string();
  const std::string train = EstTrain() + " --model linear --strategy multi_worker --model-dir " + dir +
                            " --save-checkpoints-steps 10 --log-step-count-steps 10 --timeout-secs 60";
  RunResult first = RunCommand(std::string(EST_LAUNCH_PATH) + " --workers 2 --evaluator -- " + train + " --max-steps 40");
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  // Both workers trained in sync; only worker 0 (the chief, as there is no chief job) saved.
  const std::string chief = LinesStartingWith(first.output, "[worker 0] ");
  const std::string worker = LinesStartingWith(first.output, "[worker 1] ");
  const std::string evaluator = LinesStartingWith(first.output, "[evaluator 0] ");
  CHECK(Contains(chief, "all 2 workers connected"));
  CHECK(Contains(worker, "all 2 workers connected"));
  CHECK(Contains(chief, "Saving checkpoints for 40 into"));
  CHECK_FALSE(Contains(worker, "Saving checkpoints"));
  CHECK(est::checkpoint::LatestCheckpoint(dir) == dir + "/model.ckpt-40");
  CHECK(est::ListEventFiles(dir).size() == 1);
  // The evaluator followed the checkpoints and exited after the one at max_steps.
  CHECK(Contains(evaluator, "Saving dict for global step 40"));
  CHECK(Contains(evaluator, "Exiting evaluation, global step 40 >= train max_steps 40"));
  CHECK(est::ReadEvalMetrics(dir + "/eval").count(40) == 1);

  // Started again with a larger max_steps, every worker resumes from the chief's checkpoint.
  RunResult second = RunCommand(std::string(EST_LAUNCH_PATH) + " --workers 2 -- " + train + " --max-steps 60");
  INFO(second.output);
  REQUIRE(second.exit_code == 0);
  CHECK(Contains(LinesStartingWith(second.output, "[worker 0] "), "Restoring parameters from " + dir + "/model.ckpt-40"));
  CHECK(Contains(LinesStartingWith(second.output, "[worker 1] "), "Restoring parameters from " + dir + "/model.ckpt-40"));
  CHECK(est::checkpoint::LatestCheckpoint(dir) == dir + "/model.ckpt-60");
}

TEST_CASE("two workers and an evaluator with early stopping: the evaluator exports the last checkpoint and all exit 0",
          "[apps][cluster]") {
  // --early-stopping loss:min:0 stops the training at the first check (every 10 steps) after
  // the evaluator's first result, long before max_steps. The chief records the end; the
  // evaluator, throttled to one evaluation a minute, evaluates and exports the last
  // checkpoint as the final export at once, and every task exits 0.
  const std::string dir = est::testing::FreshTempDir("cluster_early_stop").string();
  const std::string train = EstTrain() + " --model linear --strategy multi_worker --model-dir " + dir +
                            " --save-checkpoints-steps 10 --log-step-count-steps 10 --timeout-secs 60 --max-steps "
                            "1000000 --early-stopping loss:min:0 --throttle-secs 60 --export final";
  const auto start = std::chrono::steady_clock::now();
  RunResult run = RunCommand(std::string(EST_LAUNCH_PATH) + " --workers 2 --evaluator -- " + train);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  std::smatch stopped;
  REQUIRE(std::regex_search(run.output, stopped,
                            std::regex(R"(\[worker 0\] .*Stopping at global step (\d+): a hook requested it)")));
  const std::string step = stopped[1];
  CHECK(std::stoll(step) < 1000000);
  const std::string evaluator = LinesStartingWith(run.output, "[evaluator 0] ");
  CHECK(Contains(evaluator, "Saving dict for global step " + step + ":"));
  CHECK(Contains(evaluator, "Exiting evaluation: the training ended at global step " + step));
  CHECK(est::ReadEvalMetrics(dir + "/eval").count(std::stoll(step)) == 1);
  CHECK(est::checkpoint::LatestCheckpoint(dir) == dir + "/model.ckpt-" + step);
  // The final export holds the last checkpoint; the whole job took far less than the throttle.
  REQUIRE(std::filesystem::is_directory(dir + "/export/final"));
  size_t exports = 0;
  for (const auto& version : std::filesystem::directory_iterator(dir + "/export/final")) {
    ++exports;
    CHECK(Contains(est::ReadFile((version.path() / "export.json").string()), "\"global_step\": " + step + ","));
  }
  CHECK(exports == 1);
  CHECK(seconds < 60);
}

TEST_CASE("with an evaluator task, the best evaluated checkpoint is kept, though it was scored after newer ones came",
          "[apps][cluster]") {
  // The CNN saves a checkpoint every 2 steps; the evaluator evaluates the whole test set (10 000
  // images, as long as about 30 steps take), while the chief saves more than
  // keep_checkpoint_max (5) newer ones. The chief keeps the one being evaluated until it is
  // scored, so the best by --keep-best-by (loss:max: the first evaluated) is on disk at the end
  // beside the newest five; without that it is gone.
  const std::string dir = est::testing::FreshTempDir("cluster_keep_best").string();
  RunResult run = RunCommand(std::string(EST_LAUNCH_PATH) + " --workers 1 --evaluator -- " + EstTrain() +
                             " --model fashion_mnist_cnn --strategy multi_worker --model-dir " + dir +
                             " --max-steps 120 --save-checkpoints-steps 2 --eval-steps 0 --log-step-count-steps 100 "
                             "--timeout-secs 60 --keep-best-by loss:max");
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const auto evaluated = est::ReadEvalMetrics(dir + "/eval");
  REQUIRE(evaluated.size() >= 2);
  int64_t best = -1;
  double highest = -1;
  for (const auto& [step, metrics] : evaluated)
    if (metrics.at("loss") > highest) std::tie(best, highest) = std::make_pair(step, metrics.at("loss"));
  CHECK(best < 110);  // not among the newest five
  CHECK(std::filesystem::exists(dir + "/model.ckpt-" + std::to_string(best) + ".index"));
  CHECK(std::filesystem::exists(dir + "/model.ckpt-120.index"));
  CHECK_FALSE(std::filesystem::exists(dir + "/eval/checkpoint_in_evaluation"));
}

TEST_CASE("two workers and an evaluator train the Transformer language model on Debian's fortunes",
          "[apps][cluster]") {
  const std::string dir = est::testing::FreshTempDir("cluster_transformer_lm").string();
  RunResult run = RunCommand(std::string(EST_LAUNCH_PATH) + " --workers 2 --evaluator -- " + EstTrain() +
                             " --model transformer_lm --strategy multi_worker --model-dir " + dir +
                             " --max-steps 40 --batch-size 32 --save-checkpoints-steps 40 --eval-steps 20"
                             " --log-step-count-steps 10 --timeout-secs 120");
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  // From ln 256 = 5.55 nats a byte at the start.
  const auto evaluated = est::ReadEvalMetrics(dir + "/eval");
  REQUIRE(evaluated.count(40) == 1);
  CHECK(evaluated.at(40).at("loss") < kLmLossAfter40Steps);
  // The recipe reached TensorBoard: the warmup starts at 0, the gradient norm before clipping.
  std::map<std::string, double> first_step;
  for (const auto& event : est::ReadScalarEvents(est::ListEventFiles(dir).at(0)))
    if (event.step == 1) first_step[event.tag] = event.value;
  CHECK(first_step.at("learning_rate") == 0.0);
  CHECK(first_step.count("global_norm/gradient_norm") == 1);
}

TEST_CASE("a parameter-server job: a ps task, two workers and an evaluator train, and the ps exits with the job", "[apps][cluster]") {
  const std::string dir = est::testing::FreshTempDir("cluster_ps").string();
  const std::string train = EstTrain() + " --model linear --strategy parameter_server --model-dir " + dir +
                            " --save-checkpoints-steps 50 --log-step-count-steps 50 --timeout-secs 60 --max-steps 200";
  RunResult run = RunCommand(std::string(EST_LAUNCH_PATH) + " --ps 1 --workers 2 --evaluator -- " + train);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const std::string chief = LinesStartingWith(run.output, "[worker 0] ");
  const std::string worker = LinesStartingWith(run.output, "[worker 1] ");
  const std::string ps = LinesStartingWith(run.output, "[ps 0] ");
  CHECK(Contains(chief, "Initialized the variables on 1 ps task(s) at global step 0"));
  CHECK(Contains(worker, "ParameterServerStrategy: worker 1 of 2 (async mode) with 1 ps task(s)"));
  CHECK(Contains(ps, "serving job"));
  CHECK(Contains(ps, "the chief finished the job; exiting"));
  CHECK_FALSE(Contains(worker, "Saving checkpoints"));
  // Both workers' pushes advance the one global step: each stops once it sees 200 (pushes in
  // flight may take it a little past), the chief's last checkpoint is there, and the
  // evaluator exits once it has evaluated that one.
  CHECK(Contains(worker, "Loss for final step"));
  const std::optional<std::string> latest = est::checkpoint::LatestCheckpoint(dir);
  REQUIRE(latest);
  CHECK(std::stoll(latest->substr(latest->rfind('-') + 1)) >= 200);
  CHECK(Contains(LinesStartingWith(run.output, "[evaluator 0] "), ">= train max_steps 200"));
}

TEST_CASE("a chief job and a worker: the chief alone writes", "[apps][cluster]") {
  const std::string dir = est::testing::FreshTempDir("cluster_chief").string();
  RunResult run = RunCommand(std::string(EST_LAUNCH_PATH) + " --chief --workers 1 -- " + EstTrain() +
                             " --model linear --strategy multi_worker --model-dir " + dir +
                             " --max-steps 20 --save-checkpoints-steps 10 --timeout-secs 60");
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(Contains(LinesStartingWith(run.output, "[chief 0] "), "Saving checkpoints for 20"));
  CHECK_FALSE(Contains(LinesStartingWith(run.output, "[worker 0] "), "Saving checkpoints"));
  CHECK(est::checkpoint::LatestCheckpoint(dir) == dir + "/model.ckpt-20");
}

TEST_CASE("a job over mutual TLS trains, and a task with another job token or without the authority is refused", "[apps][cluster]") {
  const std::filesystem::path certificates = est::testing::FreshTempDir("cluster_tls_certificates");
  std::filesystem::create_directories(certificates);
  est::testing::MakeCertificate(certificates, "ca");
  est::testing::MakeCertificate(certificates, "task", "ca");
  const std::string c = certificates.string() + "/";
  const std::string mutual_tls = " --tls-ca-file " + c + "ca.pem --tls-cert-file " + c + "task.pem --tls-key-file " +
                                 c + "task.key --tls-require-client-cert";
  SECTION("est-launch's --tls-* flags reach every task") {
    const std::string dir = est::testing::FreshTempDir("cluster_tls").string();
    RunResult run = RunCommand(std::string(EST_LAUNCH_PATH) + " --chief --workers 1" + mutual_tls + " -- " + EstTrain() +
                               " --model linear --strategy multi_worker --model-dir " + dir +
                               " --max-steps 10 --save-checkpoints-steps 10 --timeout-secs 60");
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    CHECK(est::checkpoint::LatestCheckpoint(dir) == dir + "/model.ckpt-10");
  }
  SECTION("a parameter-server job over mutual TLS trains") {
    const std::string dir = est::testing::FreshTempDir("cluster_ps_tls").string();
    RunResult run = RunCommand(std::string(EST_LAUNCH_PATH) + " --ps 2 --workers 2" + mutual_tls + " -- " + EstTrain() +
                               " --model linear --strategy parameter_server --model-dir " + dir +
                               " --max-steps 40 --save-checkpoints-steps 40 --timeout-secs 60");
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    CHECK(Contains(LinesStartingWith(run.output, "[worker 0] "), "Initialized the variables on 2 ps task(s)"));
    CHECK(Contains(LinesStartingWith(run.output, "[ps 1] "), "the chief finished the job; exiting"));
    const std::optional<std::string> latest = est::checkpoint::LatestCheckpoint(dir);
    REQUIRE(latest);
    CHECK(std::stoll(latest->substr(latest->rfind('-') + 1)) >= 40);
  }
  SECTION("a worker without the authority fails; one with another token is refused") {
    const std::string dir = est::testing::FreshTempDir("cluster_token").string();
    const std::string cluster = R"({"cluster": {"chief": ["127.0.0.1:)" + std::to_string(est::testing::FreePort()) +
                                R"("], "worker": ["127.0.0.1:1"]}, "task": )";
    const std::string train = EstTrain() + " --model linear --strategy multi_worker --model-dir " + dir +
                              " --timeout-secs 3 --max-steps 5";
    const std::string tls = " --tls-ca-file " + c + "ca.pem --tls-cert-file " + c + "task.pem --tls-key-file " + c +
                            "task.key";
    const std::string chief = "TF_CONFIG='" + cluster + R"({"type": "chief", "index": 0}}' EST_JOB_TOKEN=right )" +
                              train + tls + " > " + dir + ".chief.log 2>&1";
    const std::string worker = "TF_CONFIG='" + cluster + R"({"type": "worker", "index": 0}}' )";
    RunResult refused = RunCommand("{ " + chief + " & " + worker + "EST_JOB_TOKEN=wrong " + train + tls +
                                   "; status=$?; wait; exit $status; }");
    INFO(refused.output);
    CHECK(refused.exit_code == 1);
    CHECK(Contains(refused.output, "est-train: error: "));
    CHECK(Contains(refused.output, "the job token is missing or wrong"));
    RunResult untrusting = RunCommand("{ " + chief + " & " + worker + "EST_JOB_TOKEN=right " + train +
                                      "; status=$?; wait; exit $status; }");
    INFO(untrusting.output);
    CHECK(untrusting.exit_code == 1);
    CHECK(Contains(untrusting.output, "A chief that serves TLS takes only clients that trust its authority"));
    std::filesystem::remove(dir + ".chief.log");
  }
  std::filesystem::remove_all(certificates);
}

TEST_CASE("a worker whose peer never arrives fails within the timeout naming the missing rank", "[apps][cluster]") {
  const std::string dir = est::testing::FreshTempDir("cluster_missing").string();
  const std::string tf_config =
      R"({"cluster": {"worker": ["127.0.0.1:)" + std::to_string(est::testing::FreePort()) +
      R"(", "127.0.0.1:1"]}, "task": {"type": "worker", "index": 0}})";
  RunResult run = RunLoneTask(tf_config, "--model linear --strategy multi_worker --model-dir " + dir + " --timeout-secs 2");
  INFO(run.output);
  CHECK(run.exit_code == 1);
  CHECK(Contains(run.output, "est-train: error: "));
  CHECK(Contains(run.output, "1"));
  CHECK(std::regex_search(run.output, std::regex("rank[s]? 1 .*never arrived")));
}

TEST_CASE("a ps task whose chief never comes gives up after --timeout-secs", "[apps][cluster]") {
  const std::string dir = est::testing::FreshTempDir("cluster_lone_ps").string();
  const std::string tf_config = R"({"cluster": {"worker": ["127.0.0.1:1"], "ps": ["127.0.0.1:)" +
                                std::to_string(est::testing::FreePort()) + R"("]}, "task": {"type": "ps", "index": 0}})";
  RunResult run =
      RunLoneTask(tf_config, "--model linear --strategy parameter_server --model-dir " + dir + " --timeout-secs 2");
  INFO(run.output);
  CHECK(run.exit_code == 1);
  CHECK(Contains(run.output, "est-train: error: ps task 0 of job '"));
  CHECK(Contains(run.output, "the chief did not give it the job's variables within 2 s"));
}

TEST_CASE("every malformed TF_CONFIG is one clear error line", "[apps][cluster]") {
  const std::string dir = est::testing::FreshTempDir("cluster_bad_config").string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"cluster": {"worker": ["localhost:1"]}, "task": {"type": "worker", "index": 0)", "TF_CONFIG"},
      {R"({"cluster": {"chief": ["a:1", "b:2"], "worker": ["c:3"]}, "task": {"type": "chief", "index": 0}})", "chief"},
      {R"({"cluster": {"worker": ["localhost:1"]}, "task": {"index": 0}})", "type"},
      {R"({"cluster": {"worker": ["localhost:1"]}, "task": {"type": "worker"}})", "index"},
      {R"({"cluster": {"worker": ["localhost:1"]}, "task": {"type": "master", "index": 0}})", "master"},
      {R"({"cluster": {"worker": ["localhost:1"]}, "task": {"type": "worker", "index": 3}})", "3"},
      {R"({"cluster": {"worker": ["localhost:1"]}, "task": {"type": "worker", "index": -1}})", "-1"},
  };
  for (const auto& [tf_config, quoted] : cases) {
    INFO(tf_config);
    RunResult run = RunCommand("TF_CONFIG='" + tf_config + "' " + EstTrain() + " --model linear --strategy multi_worker --model-dir " + dir);
    CHECK(run.exit_code == 1);
    CHECK(run.output.rfind("est-train: error: ", 0) == 0);
    CHECK(std::count(run.output.begin(), run.output.end(), '\n') == 1);
    CHECK(Contains(run.output, quoted));
  }
  RunResult no_strategy = RunCommand(
      R"(TF_CONFIG='{"cluster": {"worker": ["localhost:1", "localhost:2"]}, "task": {"type": "worker", "index": 0}}' )" +
      EstTrain() + " --model linear --model-dir " + dir);
  CHECK(no_strategy.exit_code == 1);
  CHECK(Contains(no_strategy.output, "--strategy multi_worker"));
}
