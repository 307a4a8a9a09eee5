// train_and_evaluate as an evaluator task and as a ps task.

#include <torch/torch.h>

#include <filesystem>
#include <atomic>
#include <future>
#include <thread>

#include "checkpoint/checkpoint_files.h"
#include "checkpoint/checkpoint_state.h"
#include "distribute/cluster/cluster_config.h"
#include "estimator/export/export_directory.h"
#include "distribute/multi_worker_mirrored_strategy.h"
#include "common/file_util.h"
#include "distribute/rendezvous/grpc_store.h"
#include "estimator/hooks/stop_at_step_hook.h"
#include "estimator/train_and_evaluate.h"
#include "estimator/training_end.h"
#include "estimator/summary/event_reader.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/estimator/test_models.h"
#include "tests/log_capture.h"
#include "tests/test_util.h"

#include <catch2/catch.hpp>

// The file's own names, apart from those of the tests compiled with it in one unit.
namespace evaluator_test {
using namespace est;
using est::testing::RegressionData;
using est::testing::RegressionModelFn;

namespace {

InputFn Input() {
  return [](Mode mode) { return RegressionData(16, mode == Mode::kTrain); };
}

RunConfig TaskConfig(const std::string& type) {
  RunConfig config;
  config.save_checkpoints_steps = 10;
  config.cluster = distribute::ParseTfConfig(
      R"({"cluster": {"worker": ["localhost:1", "localhost:2"], "evaluator": ["localhost:3"]}, "task": {"type": ")" +
      type + R"(", "index": 0}})");
  return config;
}

void TrainLocally(const std::string& dir, int64_t steps) {
  RunConfig config;
  config.save_checkpoints_steps = 10;
  Estimator(RegressionModelFn, dir, config).train(Input(), TrainOptions().max_steps(steps));
}

}  // namespace

TEST_CASE("the evaluator evaluates the checkpoint at max_steps and exits", "[estimator]") {
  const std::string dir = est::testing::FreshTempDir("evaluator_exits").string();
  TrainLocally(dir, 20);
  Estimator evaluator(RegressionModelFn, dir, TaskConfig("evaluator"));
  EvalResult result = train_and_evaluate(evaluator, TrainSpec(Input()).max_steps(20),
                                         EvalSpec(Input()).start_delay_secs(0).throttle_secs(0));
  CHECK(result.at("global_step") == 20);
  CHECK(ReadEvalMetrics(evaluator.eval_dir()).count(20) == 1);
}

TEST_CASE("the evaluator task runs the exporters, the one at max_steps as the final export", "[estimator][export]") {
  const std::string dir = est::testing::FreshTempDir("evaluator_exports").string();
  TrainLocally(dir, 20);
  Estimator evaluator(RegressionModelFn, dir, TaskConfig("evaluator"));
  const ExporterOptions options([] { return ServingInputReceiver{{{"x", at::kFloat, {-1, 2}}}, nullptr}; });
  TrainAndEvaluateResult result = train_and_evaluate(
      evaluator, TrainSpec(Input()).max_steps(20),
      EvalSpec(Input()).start_delay_secs(0).throttle_secs(0).exporters(
          {FinalExporter("final", options), LatestExporter("latest", options)}));
  REQUIRE(result.export_results.size() == 2);
  for (const std::string& path : result.export_results) CHECK(ReadExport(path).manifest.global_step == 20);
  CHECK(ExportVersions(dir + "/export/final").size() == 1);
}

namespace {
// Holds the training after step `step` (whose checkpoint the saver hook, after it, has written
// then) until `go` is set.
class HoldAfterStep : public SessionRunHook {
 public:
  HoldAfterStep(int64_t step, std::atomic<bool>& go) : step_(step), go_(go) {}
  void after_run(RunContext& context, const RunValues&) override {
    if (context.session().global_step() != step_ + 1) return;
    while (!go_) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }

 private:
  int64_t step_;
  std::atomic<bool>& go_;
};

// Sets `done` at the end of an evaluation.
class SetAtEnd : public SessionRunHook {
 public:
  explicit SetAtEnd(std::atomic<bool>& done) : done_(done) {}
  void end(Session&) override { done_ = true; }

 private:
  std::atomic<bool>& done_;
};
}  // namespace

TEST_CASE("a training stopped early by a hook: the evaluator evaluates and exports its last checkpoint, and exits",
          "[estimator][export]") {
  // The chief (worker 0, alone in training) stops at step 25 of max_steps 40. The evaluator,
  // throttled to one evaluation in 600 s, evaluated model.ckpt-20 meanwhile; the chief's record
  // of the end wakes it to evaluate and export model.ckpt-25 as the final export.
  const std::string dir = est::testing::FreshTempDir("evaluator_early_stop").string();
  RunConfig chief_config;
  chief_config.save_checkpoints_steps = 5;
  chief_config.cluster = distribute::ParseTfConfig(
      R"({"cluster": {"worker": ["localhost:1"], "evaluator": ["localhost:3"]}, "task": {"type": "worker", "index": 0}})");
  Estimator chief(RegressionModelFn, dir, chief_config);
  Estimator evaluator(RegressionModelFn, dir, TaskConfig("evaluator"));
  std::atomic<bool> first_evaluated{false};
  auto training = std::async(std::launch::async, [&] {
    chief.train(Input(), TrainOptions().max_steps(40).hooks({std::make_shared<HoldAfterStep>(20, first_evaluated),
                                                             std::make_shared<StopAtStepHook>(std::nullopt, 25)}));
  });
  while (!checkpoint::LatestCheckpoint(dir)) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const ExporterOptions options([] { return ServingInputReceiver{{{"x", at::kFloat, {-1, 2}}}, nullptr}; });
  const auto start = std::chrono::steady_clock::now();
  TrainAndEvaluateResult result = train_and_evaluate(evaluator, TrainSpec(Input()).max_steps(40),
                                                     EvalSpec(Input())
                                                         .start_delay_secs(0)
                                                         .throttle_secs(600)
                                                         .checkpoint_timeout_secs(600)
                                                         .hooks({std::make_shared<SetAtEnd>(first_evaluated)})
                                                         .exporters({FinalExporter("final", options)}));
  training.get();
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(300));  // not the 600 s throttle
  CHECK(result.at("global_step") == 25);
  REQUIRE(result.export_results.size() == 1);
  CHECK(ReadExport(result.export_results[0]).manifest.global_step == 25);
  const auto history = ReadEvalMetrics(evaluator.eval_dir());
  CHECK(history.size() == 2);
  CHECK(history.count(25) == 1);
  const std::optional<TrainingEnd> end = ReadTrainingEnd(dir);
  REQUIRE(end.has_value());
  CHECK(end->global_step == 25);
}

TEST_CASE("the evaluator looks for a first checkpoint every second, not every throttle_secs", "[estimator]") {
  // TensorFlow's evaluator waits throttle_secs (600 s here) after a pass that found no
  // checkpoint; this one evaluates the first checkpoint within a second or so of its saving.
  const std::string dir = est::testing::FreshTempDir("evaluator_first").string();
  Estimator evaluator(RegressionModelFn, dir, TaskConfig("evaluator"));
  auto training = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    TrainLocally(dir, 20);
  });
  const auto start = std::chrono::steady_clock::now();
  const EvalResult result =
      train_and_evaluate(evaluator, TrainSpec(Input()).max_steps(20),
                         EvalSpec(Input()).start_delay_secs(0).throttle_secs(600).checkpoint_timeout_secs(600));
  training.get();
  CHECK(result.at("global_step") == 20);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(300));
}

TEST_CASE("the evaluator takes no other job's record of a training's end, nor an older one", "[estimator]") {
  const std::string dir = est::testing::FreshTempDir("evaluator_other_end").string();
  TrainLocally(dir, 20);
  Estimator evaluator(RegressionModelFn, dir, TaskConfig("evaluator"));
  const auto evaluate = [&] {
    return train_and_evaluate(evaluator, TrainSpec(Input()).max_steps(40),
                              EvalSpec(Input()).start_delay_secs(0).throttle_secs(0.1).checkpoint_timeout_secs(1));
  };
  // The local training's record names its own job, not this evaluator's.
  REQUIRE(ReadTrainingEnd(dir).has_value());
  CHECK_THROWS_AS(evaluate(), TimeoutError);
  WriteTrainingEnd(dir, {10, distribute::DefaultJobId("localhost:1")});  // this job's, but before model.ckpt-20
  CHECK_THROWS_AS(evaluate(), TimeoutError);
  WriteTrainingEnd(dir, {20, distribute::DefaultJobId("localhost:1")});
  CHECK(evaluate().at("global_step") == 20);
  est::WriteFileAtomic(dir + "/" + kTrainingEndName, "[[[");
  CHECK_THROWS_MATCHES(evaluate(), CheckpointError,
                       est::testing::MessageMatches(Catch::StartsWith(dir + "/training_end.json is not a record of a "
                                                                      "training's end") &&
                                                    Catch::Contains("syntax error")));
}

namespace {
// Deletes a checkpoint as retention would, once the evaluation has opened it.
class DeleteCheckpointHook : public SessionRunHook {
 public:
  explicit DeleteCheckpointHook(std::string prefix) : prefix_(std::move(prefix)) {}
  void begin() override { deleted = checkpoint::RemoveCheckpointFiles(prefix_); }
  bool deleted = false;

 private:
  std::string prefix_;
};
}  // namespace

TEST_CASE("a checkpoint deleted while the evaluator reads it is still evaluated", "[estimator]") {
  const std::string dir = est::testing::FreshTempDir("evaluator_deleted").string();
  TrainLocally(dir, 20);
  auto deleter = std::make_shared<DeleteCheckpointHook>(dir + "/model.ckpt-20");
  Estimator evaluator(RegressionModelFn, dir, TaskConfig("evaluator"));
  EvalResult result = train_and_evaluate(evaluator, TrainSpec(Input()).max_steps(20),
                                         EvalSpec(Input()).start_delay_secs(0).throttle_secs(0).hooks({deleter}));
  CHECK(deleter->deleted);
  CHECK_FALSE(checkpoint::CheckpointExists(dir + "/model.ckpt-20"));
  CHECK(result.at("global_step") == 20);
}

TEST_CASE("the evaluator times out when the state file names a checkpoint that never appears", "[estimator]") {
  const std::string dir = est::testing::FreshTempDir("evaluator_missing").string();
  TrainLocally(dir, 20);
  REQUIRE(checkpoint::RemoveCheckpointFiles(dir + "/model.ckpt-20"));
  Estimator evaluator(RegressionModelFn, dir, TaskConfig("evaluator"));
  CHECK_THROWS_MATCHES(
      train_and_evaluate(evaluator, TrainSpec(Input()).max_steps(40),
                         EvalSpec(Input()).start_delay_secs(0).throttle_secs(0.1).checkpoint_timeout_secs(0.5)),
      TimeoutError, est::testing::MessageMatches(Catch::Contains(dir) && Catch::Contains("no new checkpoint")));
}

TEST_CASE("the evaluator waits, with a timeout, for a model_dir that does not exist yet", "[estimator]") {
  const std::string dir = (est::testing::FreshTempDir("evaluator_waits") / "not_yet").string();
  Estimator evaluator(RegressionModelFn, dir, TaskConfig("evaluator"));
  CHECK_THROWS_MATCHES(
      train_and_evaluate(evaluator, TrainSpec(Input()).max_steps(10),
                         EvalSpec(Input()).start_delay_secs(0).throttle_secs(0.1).checkpoint_timeout_secs(0.3)),
      TimeoutError,
      est::testing::MessageMatches(Catch::Contains("model_dir " + dir + " (which does not exist)") &&
                                   Catch::Contains("0.3 s") && Catch::Contains("checkpoint_timeout_secs")));
  CHECK_FALSE(std::filesystem::exists(dir));
}

TEST_CASE("the evaluator says that it waits once, not at every poll", "[estimator]") {
  const std::string dir = est::testing::FreshTempDir("evaluator_quiet").string();
  Estimator evaluator(RegressionModelFn, dir, TaskConfig("evaluator"));
  est::testing::LogCapture log;
  CHECK_THROWS_AS(train_and_evaluate(evaluator, TrainSpec(Input()).max_steps(10),
                                     EvalSpec(Input()).start_delay_secs(0).throttle_secs(0).checkpoint_timeout_secs(1)),
                  TimeoutError);
  // About 20 polls of 50 ms; one line.
  const std::string text = log.text();
  size_t lines = 0;
  for (size_t at = text.find("Estimator is not trained yet"); at != std::string::npos;
       at = text.find("Estimator is not trained yet", at + 1))
    ++lines;
  CHECK(lines == 1);
}

TEST_CASE("train_and_evaluate on a training task of a cluster returns a result that names the evaluator",
          "[estimator]") {
  const std::string dir = est::testing::FreshTempDir("chief_result").string();
  RunConfig config;
  config.cluster = distribute::ParseTfConfig(
      R"({"cluster": {"chief": ["localhost:1"], "evaluator": ["localhost:2"]}, "task": {"type": "chief", "index": 0}})");
  Estimator chief(RegressionModelFn, dir, config);
  const EvalResult result = train_and_evaluate(chief, TrainSpec(Input()).max_steps(5), EvalSpec(Input()));
  CHECK(chief.get_variable_value("global_step").item<int64_t>() == 5);
  CHECK_FALSE(result.evaluated());
  CHECK_THROWS_MATCHES(result["mse"], ModelError,
                       est::testing::MessageMatches(Catch::StartsWith("no metric 'mse' in the result of "
                                                                      "train_and_evaluate: task chief 0 of a cluster "
                                                                      "does not evaluate; a task of type 'evaluator' "
                                                                      "does, and writes its results to " +
                                                                      chief.eval_dir())));
}

TEST_CASE("a ps task needs ParameterServerStrategy", "[estimator]") {
  RunConfig config;
  config.cluster = distribute::ParseTfConfig(
      R"({"cluster": {"worker": ["localhost:1"], "ps": ["localhost:2"]}, "task": {"type": "ps", "index": 0}})");
  Estimator ps(RegressionModelFn, est::testing::FreshTempDir("ps_task").string(), config);
  CHECK_THROWS_MATCHES(train_and_evaluate(ps, TrainSpec(Input()).max_steps(10), EvalSpec(Input())), ConfigError,
                       est::testing::MessageMatches(Catch::Contains("task type 'ps' needs ParameterServerStrategy")));
  config.train_distribute = distribute::MirroredStrategy::Create();
  Estimator other(RegressionModelFn, est::testing::FreshTempDir("ps_task").string(), config);
  CHECK_THROWS_MATCHES(train_and_evaluate(other, TrainSpec(Input()).max_steps(10), EvalSpec(Input())), ConfigError,
                       est::testing::MessageMatches(Catch::Contains("MirroredStrategy has no tasks that serve others") &&
                                                    Catch::Contains("task type 'ps' needs ParameterServerStrategy")));
  // A multi-worker strategy takes the ps task's cluster from RunConfig, and refuses its ps job.
  config.train_distribute = distribute::MultiWorkerMirroredStrategy::Create();
  CHECK_THROWS_MATCHES(Estimator(RegressionModelFn, est::testing::FreshTempDir("ps_task").string(), config),
                       ConfigError,
                       est::testing::MessageMatches(Catch::Contains("has a 'ps' job (1 task), which it would not use") &&
                                                    Catch::Contains("parameter servers need ParameterServerStrategy")));
}

TEST_CASE("a training task of a cluster without a distributing strategy refuses before its first step",
          "[estimator]") {
  // Alone, worker 0 would train a model of its own and write checkpoints into the shared
  // model_dir, which only the chief may write.
  const std::filesystem::path dir = est::testing::FreshTempDir("no_strategy") / "model";
  RunConfig config;
  config.cluster = distribute::ParseTfConfig(
      R"({"cluster": {"chief": ["localhost:1"], "worker": ["localhost:2"]}, "task": {"type": "worker", "index": 0}})");
  Estimator worker(RegressionModelFn, dir.string(), config);
  CHECK_THROWS_MATCHES(
      train_and_evaluate(worker, TrainSpec(Input()).max_steps(5), EvalSpec(Input())), ConfigError,
      est::testing::MessageMatches(Catch::StartsWith(
          "task worker 0 of a cluster of 2 training tasks (TF_CONFIG) has no distributing strategy: it would train a "
          "model of its own and write its checkpoints into the shared model_dir. Set RunConfig::train_distribute, "
          "e.g. to MultiWorkerMirroredStrategy::Create()")));
  // So is the chief, which would train alone too.
  config.cluster = distribute::ParseTfConfig(
      R"({"cluster": {"chief": ["localhost:1"], "worker": ["localhost:2"]}, "task": {"type": "chief", "index": 0}})");
  Estimator chief(RegressionModelFn, dir.string(), config);
  CHECK_THROWS_MATCHES(chief.train(Input(), TrainOptions().max_steps(5)), ConfigError,
                       est::testing::MessageMatches(Catch::StartsWith(
                           "task chief 0 of a cluster of 2 training tasks (TF_CONFIG) has no distributing strategy")));
  // A strategy of one process takes every task for the chief.
  config.cluster = distribute::ParseTfConfig(
      R"({"cluster": {"chief": ["localhost:1"], "worker": ["localhost:2"]}, "task": {"type": "worker", "index": 0}})");
  config.train_distribute = distribute::MirroredStrategy::Create({"cpu"});
  Estimator mirrored(RegressionModelFn, dir.string(), config);
  CHECK_THROWS_MATCHES(mirrored.train(Input(), TrainOptions().max_steps(5)), ConfigError,
                       est::testing::MessageMatches(Catch::StartsWith(
                           "task worker 0 of a cluster of 2 training tasks (TF_CONFIG) is not the cluster's chief, but "
                           "its strategy MirroredStrategy takes it for the chief: only the chief writes checkpoints")));
  CHECK_FALSE(std::filesystem::exists(dir));  // nothing written
}

namespace {
/// What an evaluator with a short throttle and a generous timeout returns for max_steps 40.
EvalResult Evaluate(Estimator& evaluator, std::vector<HookPtr> hooks = {}) {
  return train_and_evaluate(
      evaluator, TrainSpec(Input()).max_steps(40),
      EvalSpec(Input()).start_delay_secs(0).throttle_secs(0.05).checkpoint_timeout_secs(30).hooks(std::move(hooks)));
}
}  // namespace

TEST_CASE("the evaluator waits for a model_dir created later and follows it to max_steps", "[estimator]") {
  const std::string dir = (est::testing::FreshTempDir("evaluator_later") / "model").string();
  Estimator evaluator(RegressionModelFn, dir, TaskConfig("evaluator"));
  auto chief = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    TrainLocally(dir, 40);
  });
  EvalResult result = Evaluate(evaluator);
  chief.get();
  CHECK(result.at("global_step") == 40);
  CHECK(ReadEvalMetrics(evaluator.eval_dir()).count(40) == 1);
}

TEST_CASE("a checkpoint pruned before the evaluator reads it is skipped with a warning", "[estimator]") {
  const std::string dir = est::testing::FreshTempDir("evaluator_pruned").string();
  TrainLocally(dir, 20);
  REQUIRE(checkpoint::RemoveCheckpointFiles(dir + "/model.ckpt-20"));  // listed in the state file, gone
  checkpoint::testing::LogCapture log;
  Estimator evaluator(RegressionModelFn, dir, TaskConfig("evaluator"));
  std::string log_while_waiting;
  auto chief = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    log_while_waiting = log.text();
    TrainLocally(dir, 40);
  });
  EvalResult result = Evaluate(evaluator);
  chief.get();
  CHECK(result.at("global_step") == 40);
  CHECK_THAT(log_while_waiting, Catch::Contains("Couldn't find checkpoint " + dir + "/model.ckpt-20") &&
                                    Catch::Contains("not trained yet"));
}

TEST_CASE("the evaluator survives checkpoints pruned under it while it follows a chief", "[estimator]") {
  const std::string dir = est::testing::FreshTempDir("evaluator_pruning").string();
  Estimator evaluator(RegressionModelFn, dir, TaskConfig("evaluator"));
  auto chief = std::async(std::launch::async, [&] {
    RunConfig config;
    config.save_checkpoints_steps = 1;
    config.keep_checkpoint_max = 1;  // every save deletes the one before
    Estimator(RegressionModelFn, dir, config).train(Input(), TrainOptions().max_steps(40));
  });
  EvalResult result = Evaluate(evaluator);
  chief.get();
  CHECK(result.at("global_step") == 40);
}

namespace {
/// Publishes the global step of each finished evaluation, for another thread to wait on.
class EvaluatedStepHook : public SessionRunHook {
 public:
  void end(Session& session) override { last_step = session.global_step(); }
  std::atomic<int64_t> last_step{-1};
};
}  // namespace

TEST_CASE("the evaluator keeps going when the chief restarts and repeats global steps", "[estimator]") {
  const std::string dir = est::testing::FreshTempDir("evaluator_restart").string();
  TrainLocally(dir, 20);
  Estimator evaluator(RegressionModelFn, dir, TaskConfig("evaluator"));
  auto evaluated = std::make_shared<EvaluatedStepHook>();
  auto chief = std::async(std::launch::async, [&] {
    // Once step 20 is evaluated, the chief crashes and its restart has lost checkpoint 20:
    // the state file names 10 again, and training saves 20 again (other weights, same name).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (evaluated->last_step < 20 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    checkpoint::RemoveCheckpointFiles(dir + "/model.ckpt-20");
    auto state = checkpoint::ReadCheckpointState(dir);
    state->model_checkpoint_path = dir + "/model.ckpt-10";
    state->all_model_checkpoint_paths.pop_back();
    state->all_model_checkpoint_timestamps.pop_back();
    checkpoint::WriteCheckpointState(dir, *state);
    TrainLocally(dir, 40);
  });
  EvalResult result = Evaluate(evaluator, {evaluated});
  chief.get();
  CHECK(result.at("global_step") == 40);
  const auto metrics = ReadEvalMetrics(evaluator.eval_dir());
  CHECK(metrics.count(20) == 1);
  CHECK(metrics.count(40) == 1);
}

}  // namespace evaluator_test
