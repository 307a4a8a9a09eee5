// Several optimizers in one step (EstimatorSpec::Train(loss, {adagrad, adam})): each steps its
// own variables, under every all-reduce strategy, and each is checkpointed.

#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <map>
#include <string>

#include "distribute/strategy.h"
#include "estimator/estimator.h"
#include "estimator/schedules/decay_schedules.h"
#include "estimator/summary/event_reader.h"
#include "tests/estimator/test_models.h"
#include "tests/estimator/worker_threads.h"
#include "tests/test_util.h"

// The file's own names, apart from those of the tests compiled with it in one unit.
namespace optimizer_groups_test {
using namespace est;

namespace {

// A wide part (linear on x, Adagrad at 0.1) and a deep part (FormulaNet, Adam with a cosine
// decay from 0.01); params["groups"] = "overlap" or "missing" gives the deep optimizer the
// wide part too, or leaves the deep part's last layer out.
EstimatorSpec WideAndDeep(const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
  auto wide = ctx.module("wide", [] {
    return testing::FillFromFormula(torch::nn::Sequential(torch::nn::Linear(3, 1)), 0.3, 0.2);
  });
  auto deep = ctx.module("deep", testing::FormulaNet);
  const at::Tensor x = features.at("x");
  auto loss = torch::mse_loss((wide->forward(x) + deep->forward(x)).squeeze(1), labels);
  if (mode == Mode::kEval) return EstimatorSpec::Eval(loss);
  const std::string groups = ctx.params().value("groups", "");
  auto& adagrad = ctx.optimizer("adagrad", [&] { return torch::optim::Adagrad(wide->parameters(), 0.1); });
  auto& adam = ctx.optimizer("adam", [&] {
    std::vector<at::Tensor> variables = groups == "missing" ? deep->ptr(0)->parameters() : deep->parameters();
    if (groups == "overlap") variables.push_back(wide->ptr(0)->parameters().front());
    return torch::optim::Adam(variables, 0.01);
  });
  return EstimatorSpec::Train(loss, {adagrad, adam}).learning_rate(adam, schedules::CosineDecay(0.01, 40, 0.1));
}

data::Dataset Input(Mode mode, const distribute::InputContext& input) { return testing::InputOfBatch(mode, input, 32); }

RunConfig Config(std::shared_ptr<distribute::Strategy> strategy = nullptr) {
  RunConfig config;
  config.save_summary_steps = 1;
  config.save_checkpoints_steps = 10;
  config.log_step_count_steps = 1000;
  config.train_distribute = std::move(strategy);
  return config;
}

}  // namespace

TEST_CASE("Two optimizers each step their variables, under mirrored and multi-worker training alike",
          "[estimator][optimizers]") {
  Estimator single(WideAndDeep, testing::FreshTempDir("groups_single").string(), Config());
  single.train(Input, TrainOptions().max_steps(20));

  // Each part moved, at its own optimizer's pace: Adagrad's first step moves every weight by
  // its rate (0.1) exactly.
  Estimator first_step(WideAndDeep, testing::FreshTempDir("groups_one").string(), Config());
  first_step.train(Input, TrainOptions().max_steps(1));
  const at::Tensor wide_start = testing::FillFromFormula(torch::nn::Sequential(torch::nn::Linear(3, 1)), 0.3, 0.2)
                                    ->named_parameters()["0.weight"];
  CHECK(torch::allclose((first_step.get_variable_value("wide/0.weight") - wide_start).abs(),
                        torch::full({1, 3}, 0.1), 0, 1e-6));

  // The deep optimizer's schedule is written under its name, and as the plain learning_rate,
  // the only schedule there is.
  std::map<int64_t, double> rates;
  std::map<int64_t, double> plain;
  for (const auto& event : ReadScalarEvents(ListEventFiles(single.model_dir()).at(0))) {
    if (event.tag == "learning_rate/adam") rates[event.step] = event.value;
    if (event.tag == "learning_rate") plain[event.step] = event.value;
  }
  REQUIRE(rates.size() == 20);
  CHECK(rates.at(1) == Approx(0.01));
  CHECK(rates.at(20) == Approx(schedules::CosineDecay(0.01, 40, 0.1)(19)));
  CHECK(plain == rates);

  Estimator mirrored(WideAndDeep, testing::FreshTempDir("groups_mirrored").string(),
                     Config(distribute::MirroredStrategy::Create({"cpu", "cpu"})));
  mirrored.train(Input, TrainOptions().max_steps(20));
  CHECK(testing::MaxRelativeDifference(single, mirrored) <= 1e-5);

  const std::string workers_dir = testing::FreshTempDir("groups_workers").string();
  testing::RunMultiWorkerThreads(2, [&](int, std::shared_ptr<distribute::Strategy> strategy) {
    Estimator(WideAndDeep, workers_dir, Config(strategy)).train(Input, TrainOptions().max_steps(20));
  });
  Estimator workers(WideAndDeep, workers_dir, Config());
  CHECK(testing::MaxRelativeDifference(single, workers) <= 1e-5);
}

TEST_CASE("Both optimizers' state is checkpointed: a restored job continues bit for bit", "[estimator][optimizers]") {
  Estimator straight(WideAndDeep, testing::FreshTempDir("groups_straight").string(), Config());
  straight.train(Input, TrainOptions().max_steps(20));
  const std::string dir = testing::FreshTempDir("groups_restored").string();
  Estimator(WideAndDeep, dir, Config()).train(Input, TrainOptions().max_steps(10));
  Estimator restored(WideAndDeep, dir, Config());
  restored.train(Input, TrainOptions().max_steps(20));
  for (const auto& name : straight.get_variable_names()) {
    INFO(name);
    CHECK(torch::equal(restored.get_variable_value(name), straight.get_variable_value(name)));
  }
}

TEST_CASE("A variable that no optimizer or two optimizers step is refused, by name", "[estimator][optimizers]") {
  auto train = [](const std::string& groups) {
    Estimator estimator(WideAndDeep, testing::FreshTempDir("groups_bad").string(), Config(),
                        nlohmann::json{{"groups", groups}});
    return testing::ErrorMessageOf<ModelError>([&] { estimator.train(Input, TrainOptions().max_steps(1)); });
  };
  CHECK_THAT(train("overlap"), Catch::Contains("trainable variable 'wide/0.weight' is stepped by two optimizers, "
                                               "'adagrad' and 'adam'; give each variable to one optimizer"));
  CHECK_THAT(train("missing"), Catch::Contains("trainable variable 'deep/2.weight' is stepped by none of the "
                                               "optimizers 'adagrad', 'adam' of the training EstimatorSpec"));
}

}  // namespace optimizer_groups_test
