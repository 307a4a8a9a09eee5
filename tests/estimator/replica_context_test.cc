// The replica context in model_fn: each replica's place, collectives every replica calls, and
// SyncBatchNorm, with which N replicas train as one replica on their N batches together.

#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include "distribute/strategy.h"
#include "estimator/estimator.h"
#include "estimator/sync_batch_norm.h"
#include "tests/distribute/rank_threads.h"
#include "tests/estimator/test_models.h"
#include "tests/estimator/worker_threads.h"
#include "tests/test_util.h"

// The file's own names, apart from those of the tests compiled with it in one unit.
namespace replica_context_test {
using namespace est;

namespace {

constexpr int64_t kGlobalBatch = 32;
constexpr int64_t kSteps = 3;

data::Dataset Input(Mode mode, const distribute::InputContext& input) {
  return testing::InputOfBatch(mode, input, kGlobalBatch);
}

RunConfig Config(std::shared_ptr<distribute::Strategy> strategy = nullptr) {
  RunConfig config;
  config.log_step_count_steps = 1000;
  config.save_summary_steps = 1000;
  config.train_distribute = std::move(strategy);
  return config;
}

// 3 -> 4 -> batch norm -> ReLU -> 1 in float64, SGD with momentum. `Norm` is SyncBatchNorm or
// torch::nn::BatchNorm1d (statistics of the replica's own batch).
template <typename Norm>
EstimatorSpec NormalizedRegression(const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
  auto first = ctx.module("first", [] {
    auto linear = testing::FillFromFormula(torch::nn::Sequential(torch::nn::Linear(3, 4)), 0.9, 0.6);
    linear->to(torch::kDouble);
    return linear;
  });
  auto norm = ctx.module("norm", [] {
    Norm module(4);
    module->to(torch::kDouble);
    return module;
  });
  auto last = ctx.module("last", [] {
    auto linear = testing::FillFromFormula(torch::nn::Sequential(torch::nn::Linear(4, 1)), 1.3, 0.4);
    linear->to(torch::kDouble);
    return linear;
  });
  at::Tensor hidden = first->forward(features.at("x").to(torch::kDouble));
  if constexpr (std::is_same_v<Norm, SyncBatchNorm>) {
    hidden = norm->forward(hidden, ctx.replica_context());
  } else {
    hidden = norm->forward(hidden);
  }
  const at::Tensor predictions = last->forward(torch::relu(hidden)).squeeze(1);
  const at::Tensor loss = torch::mse_loss(predictions, labels.to(torch::kDouble));
  if (mode == Mode::kEval) return EstimatorSpec::Eval(loss);
  std::vector<at::Tensor> parameters = first->parameters();
  for (const auto& p : norm->parameters()) parameters.push_back(p);
  for (const auto& p : last->parameters()) parameters.push_back(p);
  auto& sgd = ctx.optimizer(
      "sgd", [&] { return torch::optim::SGD(parameters, torch::optim::SGDOptions(0.1).momentum(0.9)); });
  return EstimatorSpec::Train(loss, sgd);
}

// Trains NormalizedRegression<Norm> for kSteps under `strategy` (one replica when null).
template <typename Norm>
std::unique_ptr<Estimator> Train(const std::string& name, std::shared_ptr<distribute::Strategy> strategy = nullptr) {
  auto estimator = std::make_unique<Estimator>(NormalizedRegression<Norm>, testing::FreshTempDir(name).string(),
                                               Config(std::move(strategy)));
  estimator->train(Input, TrainOptions().max_steps(kSteps));
  return estimator;
}

}  // namespace

TEST_CASE("model_fn knows its replica id, the replicas in sync and its task", "[estimator][replica_context]") {
  std::mutex mutex;
  std::vector<std::tuple<int, int, std::string, int>> seen;
  auto model_fn = [&](const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      ReplicaContext& replica = ctx.replica_context();
      seen.emplace_back(replica.replica_id_in_sync_group(), replica.num_replicas_in_sync(), replica.task_type(),
                        replica.task_id());
    }
    return testing::SgdRegression(features, labels, mode, ctx);
  };
  Estimator mirrored(model_fn, testing::FreshTempDir("replica_ids").string(),
                     Config(distribute::MirroredStrategy::Create({"cpu", "cpu", "cpu", "cpu"})));
  mirrored.train(Input, TrainOptions().max_steps(1));
  using Seen = std::tuple<int, int, std::string, int>;
  CHECK((seen == std::vector<Seen>{{0, 4, "", 0}, {1, 4, "", 0}, {2, 4, "", 0}, {3, 4, "", 0}}));
}

TEST_CASE("all_reduce in model_fn sums every replica's value and is differentiable", "[estimator][replica_context]") {
  // Each replica scales its loss by (sum over replicas of its batch's label mean) / that sum's
  // value: the loss is unchanged, but its gradient flows through the all_reduce.
  std::mutex mutex;
  std::vector<double> sums;
  auto model_fn = [&](const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
    auto net = ctx.module("net", testing::FormulaNet);
    const at::Tensor predictions = net->forward(features.at("x")).squeeze(1);
    const at::Tensor total = ctx.replica_context().all_reduce(distribute::ReduceOp::kSum, predictions.mean());
    {
      std::lock_guard<std::mutex> lock(mutex);
      sums.push_back(total.item<double>());
    }
    // d(total)/d(own predictions) pulls every replica's parameters toward a larger total.
    const at::Tensor loss = torch::mse_loss(predictions, labels) - 0.01 * total;
    auto& sgd = ctx.optimizer("sgd", [&] { return torch::optim::SGD(net->parameters(), 0.1); });
    return EstimatorSpec::Train(loss, sgd);
  };
  Estimator mirrored(model_fn, testing::FreshTempDir("all_reduce_grad").string(),
                     Config(distribute::MirroredStrategy::Create({"cpu", "cpu"})));
  mirrored.train(Input, TrainOptions().max_steps(1));
  REQUIRE(sums.size() == 2);
  CHECK(sums[0] == sums[1]);

  // By hand on one replica: replica r's loss is mse_r − 0.01·(m_0 + m_1), m_r its batch's mean
  // prediction; the averaged gradient is that of mean_r(mse_r) − 0.01·(m_0 + m_1).
  torch::nn::Sequential net = testing::FormulaNet();
  const data::Element batch = Input(Mode::kTrain, distribute::InputContext(1, 0, 1)).make_iterator()->next().value();
  const at::Tensor x = batch.features.at("x");
  const at::Tensor p0 = net->forward(x.slice(0, 0, 16)).squeeze(1);
  const at::Tensor p1 = net->forward(x.slice(0, 16, 32)).squeeze(1);
  const at::Tensor loss = (torch::mse_loss(p0, batch.labels.slice(0, 0, 16)) +
                           torch::mse_loss(p1, batch.labels.slice(0, 16, 32))) / 2 -
                          0.01 * (p0.mean() + p1.mean());
  loss.backward();
  CHECK(sums[0] == Approx((p0.mean() + p1.mean()).item<double>()).epsilon(1e-6));
  for (const auto& item : net->named_parameters()) {
    INFO(item.key());
    const at::Tensor expected = item.value().detach() - 0.1 * item.value().grad();
    CHECK(torch::allclose(mirrored.get_variable_value("net/" + item.key()), expected, 1e-5, 1e-6));
  }
}

TEST_CASE("SyncBatchNorm: 2 replicas and 2 workers of batch B train as 1 replica of batch 2B",
          "[estimator][replica_context][sync_batch_norm]") {
  const auto one = Train<SyncBatchNorm>("sync_bn_one");
  const auto mirrored = Train<SyncBatchNorm>("sync_bn_mirrored", distribute::MirroredStrategy::Create({"cpu", "cpu"}));
  CHECK(testing::MaxRelativeDifference(*one, *mirrored) < 1e-12);
  // The running statistics moved, the same everywhere.
  CHECK(one->get_variable_value("norm/num_batches_tracked").item<int64_t>() == kSteps);
  CHECK_FALSE(torch::allclose(one->get_variable_value("norm/running_mean"), torch::zeros({4}, torch::kDouble)));

  std::vector<std::unique_ptr<Estimator>> workers(2);
  testing::RunMultiWorkerThreads(2, [&](int rank, std::shared_ptr<distribute::Strategy> strategy) {
    auto estimator = std::make_unique<Estimator>(NormalizedRegression<SyncBatchNorm>,
                                                 testing::FreshTempDir("sync_bn_workers_" + std::to_string(rank)).string(),
                                                 Config(std::move(strategy)));
    estimator->train(Input, TrainOptions().max_steps(kSteps));
    workers[static_cast<size_t>(rank)] = std::move(estimator);
  });
  CHECK(testing::MaxRelativeDifference(*one, *workers[0]) < 1e-12);

  // The test can fail: batch norm over each replica's own batch trains otherwise.
  const auto local_one = Train<torch::nn::BatchNorm1d>("local_bn_one");
  const auto local_mirrored =
      Train<torch::nn::BatchNorm1d>("local_bn_mirrored", distribute::MirroredStrategy::Create({"cpu", "cpu"}));
  CHECK(testing::MaxRelativeDifference(*local_one, *local_mirrored) > 1e-4);
  // Checkpoints of either restore into the other: the same variable names.
  CHECK(one->get_variable_names() == local_one->get_variable_names());
}

TEST_CASE("A collective that one replica calls and another does not is a ModelError, not a hang",
          "[estimator][replica_context]") {
  auto model_fn = [](const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
    EstimatorSpec spec = testing::SgdRegression(features, labels, mode, ctx);
    if (ctx.replica_context().replica_id_in_sync_group() == 0)
      ctx.replica_context().all_reduce(distribute::ReduceOp::kSum, labels.mean());
    return spec;
  };
  Estimator mirrored(model_fn, testing::FreshTempDir("one_replica_collective").string(),
                     Config(distribute::MirroredStrategy::Create({"cpu", "cpu"})));
  CHECK_THROWS_WITH(mirrored.train(Input, TrainOptions().max_steps(1)),
                    Catch::Contains("all_reduce (collective 1 of this step) was called by replica 0 but replica 1 "
                                    "finished its model code without calling it"));
}

TEST_CASE("A collective that one worker calls and another does not times out with a TimeoutError",
          "[estimator][replica_context]") {
  std::vector<std::exception_ptr> errors(2);
  std::atomic<int> finished{0};
  const auto started = std::chrono::steady_clock::now();
  testing::RunMultiWorkerThreads(
      2,
      [&](int rank, std::shared_ptr<distribute::Strategy> strategy) {
        auto model_fn = [rank](const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
          if (rank == 0) ctx.replica_context().all_reduce(distribute::ReduceOp::kSum, labels.mean());
          return testing::SgdRegression(features, labels, mode, ctx);
        };
        Estimator estimator(model_fn, testing::FreshTempDir("one_worker_collective_" + std::to_string(rank)).string(),
                            Config(std::move(strategy)));
        try {
          estimator.train(Input, TrainOptions().max_steps(1));
        } catch (...) {
          errors[static_cast<size_t>(rank)] = std::current_exception();
        }
        // Both connections stay open until both workers have failed: a worker that closed its
        // own would turn the other's timeout into a lost peer.
        finished.fetch_add(1);
        const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (finished.load() < 2 && std::chrono::steady_clock::now() < limit)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
      },
      {}, true, std::chrono::seconds(2));
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(20));
  REQUIRE(errors[0]);
  REQUIRE(errors[1]);
  CHECK_THROWS_AS(std::rethrow_exception(errors[0]), TimeoutError);
  CHECK_THAT(testing::MessageOf(errors[0]), Catch::Contains("model_fn's all_reduce across workers"));
}

}  // namespace replica_context_test
