// RunConfig::keep_best_checkpoints: the best evaluated checkpoints by a metric are kept beside
// the newest keep_checkpoint_max, chosen from the evaluation's event files, across restarts.

#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_files.h"
#include "checkpoint/checkpoint_state.h"
#include "estimator/estimator.h"
#include "estimator/metrics/mean.h"
#include "tests/estimator/test_models.h"
#include "tests/test_util.h"

// The file's own names, apart from those of the tests compiled with it in one unit.
namespace best_checkpoints_test {
using namespace est;

namespace {

// The evaluation's "score" of the checkpoint of each step.
const std::map<int64_t, double> kScore = {{1, 0.5}, {2, 0.9}, {3, 0.2}, {4, 0.7},
                                          {5, 0.1}, {6, 0.3}, {7, 0.95}, {8, 0.0}};

EstimatorSpec ScoredRegression(const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
  EstimatorSpec spec = testing::SgdRegression(features, labels, mode, ctx);
  if (mode == Mode::kEval)
    spec.eval_metric_ops["score"] = metrics::Mean(at::scalar_tensor(kScore.at(ctx.global_step()), at::kDouble));
  return spec;
}

data::Dataset Input(Mode mode, const distribute::InputContext& input) { return testing::InputOfBatch(mode, input, 8); }

RunConfig Config(bool keep_best) {
  RunConfig config;
  config.log_step_count_steps = 1000;
  config.save_summary_steps = 1000;
  config.keep_checkpoint_max = 2;
  if (keep_best) config.keep_best_checkpoints = KeepBestCheckpoints().metric("score").higher_is_better(true).count(2);
  return config;
}

// Trains and evaluates one step at a time, from the step after the last up to `last`.
void TrainAndEvaluateEachStep(Estimator& estimator, int64_t first, int64_t last) {
  for (int64_t step = first; step <= last; ++step) {
    estimator.train(Input, TrainOptions().max_steps(step));
    estimator.evaluate(Input, EvalOptions().steps(1));
  }
}

// The steps whose checkpoints are in `dir`, and those its state file lists.
std::vector<int64_t> StepsOnDisk(const std::string& dir) {
  std::vector<int64_t> steps;
  for (int64_t step = 1; step <= 8; ++step)
    if (checkpoint::CheckpointExists(checkpoint::CheckpointPrefix(dir, step))) steps.push_back(step);
  return steps;
}

std::vector<std::string> Listed(const std::string& dir) {
  std::vector<std::string> names;
  const std::optional<checkpoint::CheckpointState> state = checkpoint::ReadCheckpointState(dir);
  for (const auto& path : state.value().all_model_checkpoint_paths)
    names.push_back(std::filesystem::path(path).filename().string());
  return names;
}

}  // namespace

TEST_CASE("The best checkpoints by an evaluation metric survive keep_checkpoint_max and a restart",
          "[estimator][best_checkpoints]") {
  const std::string dir = testing::FreshTempDir("best_checkpoints").string();
  {
    Estimator estimator(ScoredRegression, dir, Config(true));
    TrainAndEvaluateEachStep(estimator, 1, 6);
  }
  // Newest two (5, 6), and the best two by score of those evaluated (2: 0.9, 4: 0.7).
  CHECK((StepsOnDisk(dir) == std::vector<int64_t>{2, 4, 5, 6}));
  CHECK((Listed(dir) == std::vector<std::string>{"model.ckpt-2", "model.ckpt-4", "model.ckpt-5", "model.ckpt-6"}));

  // A new Estimator (a restarted job) reads the scores again from the event files; step 7's
  // 0.95 displaces step 4's 0.7.
  {
    Estimator restarted(ScoredRegression, dir, Config(true));
    TrainAndEvaluateEachStep(restarted, 7, 8);
  }
  CHECK((StepsOnDisk(dir) == std::vector<int64_t>{2, 7, 8}));
  CHECK((Listed(dir) == std::vector<std::string>{"model.ckpt-2", "model.ckpt-7", "model.ckpt-8"}));

  // The test can fail: without the option keep_checkpoint_max keeps the newest two only.
  const std::string plain = testing::FreshTempDir("newest_checkpoints").string();
  Estimator estimator(ScoredRegression, plain, Config(false));
  TrainAndEvaluateEachStep(estimator, 1, 6);
  CHECK((StepsOnDisk(plain) == std::vector<int64_t>{5, 6}));
}

TEST_CASE("keep_best_checkpoints' bad options are ConfigErrors naming the field", "[estimator][best_checkpoints]") {
  RunConfig config;
  config.keep_best_checkpoints = KeepBestCheckpoints().count(0);
  CHECK_THROWS_WITH(Estimator(ScoredRegression, testing::FreshTempDir("best_bad").string(), config),
                    Catch::Contains("keep_best_checkpoints: count must be at least 1, got 0"));
  config.keep_best_checkpoints = KeepBestCheckpoints().metric("");
  CHECK_THROWS_WITH(Estimator(ScoredRegression, testing::FreshTempDir("best_bad").string(), config),
                    Catch::Contains("keep_best_checkpoints: metric must name an evaluation metric"));
}

}  // namespace best_checkpoints_test
