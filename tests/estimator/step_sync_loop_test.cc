// The training loop driven by a fake strategy: it hands each replica's step to the
// strategy's StepSync before the last backward, has its VariableStore apply what finish()
// returns, stops on the flags it agrees, and asks it for the "any worker" decision and the
// final barrier.

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "distribute/step_sync.h"
#include "distribute/strategy.h"
#include "estimator/estimator.h"
#include "tests/estimator/test_models.h"
#include "tests/test_util.h"

#include <catch2/catch.hpp>

using namespace est;

namespace {

// Records every call; agrees the loss 42 and, at its third finish(), that the input ended.
class RecordingStepSync : public distribute::StepSync {
 public:
  explicit RecordingStepSync(std::vector<std::string>& calls) : calls_(calls) {}
  void before_last_backward(int replica, const distribute::ReplicaStep& step, distribute::StepFlags) override {
    calls_.push_back("before " + std::to_string(replica) + " (" + std::to_string(step.variables.size()) +
                     " variables)");
  }
  distribute::StepFlags finish(std::vector<distribute::ReplicaStep>& replicas, distribute::StepFlags local) override {
    calls_.push_back("finish " + std::to_string(replicas.size()));
    replicas.front().loss = at::scalar_tensor(42.0);
    distribute::StepFlags any = local;
    any.input_ended = ++finishes_ == 3;
    return any;
  }
  bool any_worker(bool flag) override {
    calls_.push_back("any_worker");
    return flag;
  }
  void barrier() override { calls_.push_back("barrier"); }

 private:
  std::vector<std::string>& calls_;
  int finishes_ = 0;
};

// Records every call; applies a step as the replicas' own store does (the optimizers step).
class RecordingVariables : public distribute::VariableStore {
 public:
  explicit RecordingVariables(std::vector<std::string>& calls) : calls_(calls) {}
  void initialize(const distribute::NamedVariables& variables) override {
    calls_.push_back("initialize " + std::to_string(variables.size()) + " variables");
  }
  int64_t apply(std::vector<distribute::ReplicaStep>& replicas, const distribute::StepUpdate& update,
                distribute::StepFlags&) override {
    calls_.push_back("apply at input position " + std::to_string(update.input_position) + " (" +
                     std::to_string(replicas.front().buffers.size()) + " buffers)");
    if (update.finite) update.step_optimizers();
    return update.global_step + 1;
  }

 private:
  std::vector<std::string>& calls_;
};

// Two CPU replicas in this process whose steps synchronize through the recording seam.
class FakeStrategy : public distribute::Strategy {
 public:
  std::string name() const override { return "FakeStrategy"; }
  std::vector<c10::Device> local_devices() const override { return {c10::Device("cpu"), c10::Device("cpu")}; }
  distribute::TrainingSync make_training_sync(const distribute::StepSyncOptions& options) override {
    micro_batches = options.micro_batches;
    return {std::make_unique<RecordingStepSync>(calls), std::make_unique<RecordingVariables>(calls)};
  }
  std::vector<std::string> calls;
  int64_t micro_batches = 0;
};

// Keeps the loss each step reported to the hooks.
class LossHook : public SessionRunHook {
 public:
  RunArgs before_run(RunContext&) override { return RunArgs{{"loss"}}; }
  void after_run(RunContext&, const RunValues& values) override {
    losses.push_back(values.results.at("loss").item<double>());
  }
  std::vector<double> losses;
};

}  // namespace

TEST_CASE("The training loop synchronizes each step through the strategy's StepSync and VariableStore", "[estimator]") {
  auto strategy = std::make_shared<FakeStrategy>();
  RunConfig config;
  config.train_distribute = strategy;
  config.gradient_accumulation_steps = 2;
  config.save_checkpoints_steps = 100;
  Estimator estimator(est::testing::RegressionModelFn, est::testing::FreshTempDir("step_sync_loop").string(), config);
  auto losses = std::make_shared<LossHook>();
  estimator.train([] { return est::testing::RegressionData(4, /*repeat=*/true); },
                  TrainOptions().max_steps(100).hooks({losses}));

  CHECK(strategy->micro_batches == 2);
  // Started with one decision; replica 0's variables initialized when model_fn creates them;
  // then per step each replica before its last backward, one finish and one apply, until the
  // StepSync's agreed "input ended" after step 3; a barrier last.
  std::vector<std::string> expected = {"any_worker", "initialize 2 variables"};
  for (int step = 0; step < 3; ++step) {
    expected.insert(expected.end(), {"before 0 (2 variables)", "before 1 (2 variables)", "finish 2",
                                     "apply at input position " + std::to_string((step + 1) * 4) + " (0 buffers)"});
  }
  expected.push_back("barrier");
  CHECK(strategy->calls == expected);
  // The hooks saw the loss the StepSync agreed, and the checkpoint is at step 3.
  CHECK(losses->losses == std::vector<double>{42, 42, 42});
  CHECK(estimator.get_variable_value("global_step").item<int64_t>() == 3);
}
