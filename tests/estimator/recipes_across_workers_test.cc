// What the training recipe keeps beside the weights, under a strategy: moving averages, warm
// start and best-checkpoint retention of 2 workers (all-reduce, workers as threads) are 1
// worker's with the same global batch; an export reads the moving averages.

#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_files.h"
#include "estimator/estimator.h"
#include "estimator/export/export_directory.h"
#include "estimator/metrics/mean.h"
#include "estimator/moving_average.h"
#include "tests/estimator/test_models.h"
#include "tests/estimator/worker_threads.h"
#include "tests/test_util.h"

#include <catch2/catch.hpp>

// The file's own names, apart from those of the tests compiled with it in one unit.
namespace recipes_across_workers_test {
using namespace est;

namespace {

data::Dataset Input(Mode mode, const distribute::InputContext& input) { return testing::InputOfBatch(mode, input, 32); }

RunConfig Config(std::shared_ptr<distribute::Strategy> strategy) {
  RunConfig config;
  config.tf_random_seed = 3;
  config.save_checkpoints_steps = 10;
  config.save_summary_steps = 1000;
  config.log_step_count_steps = 1000;
  config.train_distribute = std::move(strategy);
  return config;
}

RunConfig AveragedConfig(std::shared_ptr<distribute::Strategy> strategy) {
  RunConfig config = Config(std::move(strategy));
  config.moving_average = MovingAverageOptions().decay(0.9).num_updates(true);
  return config;
}

// Trains `steps` steps of 2 workers into `dir`, each worker's Estimator made by `make`.
template <typename Make>
void TrainTwoWorkers(const std::string& dir, int64_t steps, Make make) {
  testing::RunMultiWorkerThreads(2, [&](int, std::shared_ptr<distribute::Strategy> strategy) {
    make(dir, strategy).train(Input, TrainOptions().max_steps(steps));
  });
}

}  // namespace

TEST_CASE("The moving averages of 2 workers are 1 worker's with the same global batch, and evaluation reads them",
          "[estimator][moving_average][multiprocess]") {
  const std::string single_dir = testing::FreshTempDir("recipes_ema_single").string();
  Estimator single(testing::SgdRegression, single_dir, AveragedConfig(nullptr));
  single.train(Input, TrainOptions().max_steps(20));
  const std::string workers_dir = testing::FreshTempDir("recipes_ema_workers").string();
  TrainTwoWorkers(workers_dir, 20, [](const std::string& dir, std::shared_ptr<distribute::Strategy> strategy) {
    return Estimator(testing::SgdRegression, dir, AveragedConfig(std::move(strategy)));
  });
  Estimator workers(testing::SgdRegression, workers_dir, AveragedConfig(nullptr));
  const std::vector<std::string> names = workers.get_variable_names();
  CHECK(std::count_if(names.begin(), names.end(), [](const std::string& name) {
          return name.find(kMovingAverageSuffix) != std::string::npos;
        }) == 4);  // both layers' weight and bias
  CHECK(names == single.get_variable_names());
  CHECK(testing::MaxRelativeDifference(single, workers) <= 1e-5);  // the averages among them
  // The averages differ from the weights, and evaluation reads them.
  CHECK_FALSE(torch::allclose(workers.get_variable_value("net/0.weight"),
                              workers.get_variable_value(std::string("net/0.weight") + kMovingAverageSuffix)));
  CHECK(workers.evaluate(Input).at("loss") == Approx(single.evaluate(Input).at("loss")).epsilon(1e-5));
}

TEST_CASE("2 workers warm-started from a checkpoint train as 1 worker warm-started from it", "[estimator][multiprocess]") {
  const std::string source = testing::FreshTempDir("recipes_warm_source").string();
  Estimator(testing::SgdRegression, source, Config(nullptr)).train(Input, TrainOptions().max_steps(10));
  const WarmStartSettings warm = WarmStartSettings(source).vars_to_warm_start({"net/.*"});
  const std::string single_dir = testing::FreshTempDir("recipes_warm_single").string();
  Estimator single(testing::SgdRegression, single_dir, Config(nullptr), nlohmann::json::object(), warm);
  single.train(Input, TrainOptions().max_steps(15));
  const std::string workers_dir = testing::FreshTempDir("recipes_warm_workers").string();
  TrainTwoWorkers(workers_dir, 15, [&](const std::string& dir, std::shared_ptr<distribute::Strategy> strategy) {
    return Estimator(testing::SgdRegression, dir, Config(std::move(strategy)), nlohmann::json::object(), warm);
  });
  Estimator workers(testing::SgdRegression, workers_dir, Config(nullptr));
  CHECK(workers.get_variable_value("global_step").item<int64_t>() == 15);
  CHECK(testing::MaxRelativeDifference(single, workers) <= 1e-5);
  // The warm start mattered: trained afresh for 15 steps, the weights differ.
  const std::string fresh_dir = testing::FreshTempDir("recipes_warm_fresh").string();
  Estimator fresh(testing::SgdRegression, fresh_dir, Config(nullptr));
  fresh.train(Input, TrainOptions().max_steps(15));
  CHECK(testing::MaxRelativeDifference(single, fresh) > 1e-3);
}

namespace {

// The evaluation's "score" of the checkpoint of each step.
const std::map<int64_t, double> kScore = {{1, 0.5}, {2, 0.9}, {3, 0.2}, {4, 0.7}, {5, 0.1}, {6, 0.3}};

EstimatorSpec ScoredRegression(const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
  EstimatorSpec spec = testing::SgdRegression(features, labels, mode, ctx);
  if (mode == Mode::kEval)
    spec.eval_metric_ops["score"] = metrics::Mean(at::scalar_tensor(kScore.at(ctx.global_step()), at::kDouble));
  return spec;
}

RunConfig KeepBestConfig(std::shared_ptr<distribute::Strategy> strategy) {
  RunConfig config = Config(std::move(strategy));
  config.save_checkpoints_steps = 1000;  // each train() saves its last step
  config.keep_checkpoint_max = 2;
  config.keep_best_checkpoints = KeepBestCheckpoints().metric("score").higher_is_better(true).count(2);
  return config;
}

std::vector<int64_t> StepsOnDisk(const std::string& dir) {
  std::vector<int64_t> steps;
  for (int64_t step = 1; step <= 6; ++step)
    if (checkpoint::CheckpointExists(checkpoint::CheckpointPrefix(dir, step))) steps.push_back(step);
  return steps;
}

}  // namespace

TEST_CASE("Under 2 workers the chief keeps the best evaluated checkpoints beside the newest, as 1 worker does",
          "[estimator][best_checkpoints][multiprocess]") {
  // Each worker trains one step at a time and evaluates; the chief writes the results.
  const auto train_and_evaluate_each_step = [](Estimator& estimator) {
    for (int64_t step = 1; step <= 6; ++step) {
      estimator.train(Input, TrainOptions().max_steps(step));
      estimator.evaluate(Input, EvalOptions().steps(1));
    }
  };
  const std::string single_dir = testing::FreshTempDir("recipes_best_single").string();
  Estimator single(ScoredRegression, single_dir, KeepBestConfig(nullptr));
  train_and_evaluate_each_step(single);
  const std::string workers_dir = testing::FreshTempDir("recipes_best_workers").string();
  testing::RunMultiWorkerThreads(2, [&](int, std::shared_ptr<distribute::Strategy> strategy) {
    Estimator worker(ScoredRegression, workers_dir, KeepBestConfig(std::move(strategy)));
    train_and_evaluate_each_step(worker);
  });
  // Newest two (5, 6), and the best two by score (2: 0.9, 4: 0.7).
  CHECK(StepsOnDisk(single_dir) == std::vector<int64_t>{2, 4, 5, 6});
  CHECK(StepsOnDisk(workers_dir) == std::vector<int64_t>{2, 4, 5, 6});
}

namespace {
// SgdRegression with a prediction: its net's output.
EstimatorSpec ServedRegression(const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
  if (mode != Mode::kPredict) return testing::SgdRegression(features, labels, mode, ctx);
  auto net = ctx.module("net", testing::FormulaNet);
  return EstimatorSpec::Predict({{"y", net->forward(features.at("x")).squeeze(1)}});
}
}  // namespace

TEST_CASE("An export with moving averages holds the averages; with inference_weights kVariables, the weights",
          "[estimator][moving_average][export]") {
  const std::string dir = testing::FreshTempDir("recipes_ema_export").string();
  Estimator estimator(ServedRegression, dir, AveragedConfig(nullptr));
  estimator.train(Input, TrainOptions().max_steps(20));
  const ServingInputFn serving = [] { return ServingInputReceiver{{{"x", at::kFloat, {-1, 3}}}, nullptr}; };
  const LoadedExport averaged = ReadExport(estimator.export_saved_model(dir + "/export", serving));
  CHECK(averaged.manifest.moving_averages);
  RunConfig raw_config = AveragedConfig(nullptr);
  raw_config.inference_weights = InferenceWeights::kVariables;
  const LoadedExport raw =
      ReadExport(Estimator(ServedRegression, dir, raw_config).export_saved_model(dir + "/export_raw", serving));
  CHECK_FALSE(raw.manifest.moving_averages);
  for (const std::string name : {"net/0.weight", "net/0.bias", "net/2.weight", "net/2.bias"}) {
    INFO(name);
    CHECK(torch::equal(averaged.weights.at(name), estimator.get_variable_value(name + kMovingAverageSuffix)));
    CHECK(torch::equal(raw.weights.at(name), estimator.get_variable_value(name)));
    CHECK_FALSE(torch::equal(averaged.weights.at(name), raw.weights.at(name)));
  }
}

}  // namespace recipes_across_workers_test
