#include "estimator/train_and_evaluate.h"

#include <catch2/catch.hpp>

#include <functional>
#include <limits>

#include "common/error.h"
#include "estimator/export/export_directory.h"
#include "estimator/summary/event_reader.h"
#include "tests/estimator/test_models.h"
#include "tests/test_util.h"

using namespace est;
using est::testing::RegressionData;
using est::testing::RegressionModelFn;

namespace {
RunConfig EveryTenSteps() {
  RunConfig config;
  config.tf_random_seed = 3;
  config.save_checkpoints_steps = 10;
  return config;
}
InputFn Input() {
  return [](Mode mode) { return RegressionData(16, mode == Mode::kTrain); };
}
std::vector<int64_t> EvaluatedSteps(const std::string& eval_dir) {
  std::vector<int64_t> steps;
  for (const auto& [step, metrics] : ReadEvalMetrics(eval_dir)) steps.push_back(step);
  return steps;
}
}  // namespace

TEST_CASE("train_and_evaluate evaluates every new checkpoint without throttling", "[estimator][e2e]") {
  const std::string dir = est::testing::FreshTempDir("tae_every").string();
  Estimator estimator(RegressionModelFn, dir, EveryTenSteps());
  EvalResult result = train_and_evaluate(estimator, TrainSpec(Input()).max_steps(30),
                                         EvalSpec(Input()).steps(std::nullopt).throttle_secs(0));
  CHECK(result.at("global_step") == 30);
  CHECK(result.count("mse") == 1);
  CHECK(EvaluatedSteps(estimator.eval_dir()) == std::vector<int64_t>{10, 20, 30});

  // Training already at max_steps is skipped; the latest checkpoint is still evaluated.
  EvalResult again = train_and_evaluate(estimator, TrainSpec(Input()).max_steps(30), EvalSpec(Input()).steps(2));
  CHECK(again.at("global_step") == 30);
}

TEST_CASE("train_and_evaluate throttles evaluations and always evaluates the final checkpoint", "[estimator]") {
  const std::string dir = est::testing::FreshTempDir("tae_throttle").string();
  Estimator estimator(RegressionModelFn, dir, EveryTenSteps());
  train_and_evaluate(estimator, TrainSpec(Input()).max_steps(30),
                     EvalSpec(Input()).steps(2).throttle_secs(3600).name("holdout"));
  CHECK(EvaluatedSteps(estimator.eval_dir("holdout")) == std::vector<int64_t>{10, 30});
}

TEST_CASE("train_and_evaluate rejects invalid specs", "[estimator]") {
  const std::string dir = est::testing::FreshTempDir("tae_errors").string();
  Estimator estimator(RegressionModelFn, dir, EveryTenSteps());
  CHECK_THROWS_AS(train_and_evaluate(estimator, TrainSpec(InputFn()), EvalSpec(Input())), ConfigError);
  CHECK_THROWS_AS(train_and_evaluate(estimator, TrainSpec(Input()), EvalSpec(Input()).throttle_secs(-1)), ConfigError);
  CHECK_THROWS_AS(train_and_evaluate(estimator, TrainSpec(Input()), EvalSpec(Input()).steps(0)), ConfigError);
}

namespace {

// The serving input of RegressionModelFn: "x", float32 [-1, 2].
ServingInputReceiver RegressionServing() { return {{{"x", at::kFloat, {-1, 2}}}, nullptr}; }

// The global steps of the exports under model_dir/export/<name>, oldest first.
std::vector<int64_t> ExportedSteps(const Estimator& estimator, const std::string& name) {
  const std::string base = estimator.model_dir() + "/export/" + name;
  std::vector<int64_t> steps;
  for (int64_t version : ExportVersions(base))
    steps.push_back(ReadExport(ExportVersionPath(base, version)).manifest.global_step);
  return steps;
}

}  // namespace

TEST_CASE("train_and_evaluate runs the exporters after each evaluation and returns the final exports",
          "[estimator][export]") {
  Estimator estimator(RegressionModelFn, est::testing::FreshTempDir("tae_exporters").string(), EveryTenSteps());
  const ExporterOptions options = ExporterOptions(RegressionServing).model({"regression", "3"});
  TrainAndEvaluateResult result = train_and_evaluate(
      estimator, TrainSpec(Input()).max_steps(40),
      EvalSpec(Input()).steps(2).throttle_secs(0).exporters(
          {LatestExporter("latest", ExporterOptions(options).exports_to_keep(2)), FinalExporter("final", options),
           // "Better" is an earlier step: only the first evaluation is the best.
           BestExporter("best", options, [](const EvalResult& best, const EvalResult& current) {
             return current.at("global_step") < best.at("global_step");
           })}));
  CHECK(result.at("global_step") == 40);
  // The latest exporter exported steps 10 to 40 and kept the newest two; the final exporter
  // the last only; the best exporter the first only.
  CHECK((ExportedSteps(estimator, "latest") == std::vector<int64_t>{30, 40}));
  CHECK((ExportedSteps(estimator, "final") == std::vector<int64_t>{40}));
  CHECK((ExportedSteps(estimator, "best") == std::vector<int64_t>{10}));
  REQUIRE(result.export_results.size() == 2);  // after the final evaluation: latest and final
  CHECK(ReadExport(result.export_results[0]).manifest.global_step == 40);
  CHECK(result.export_results[0].find("/export/latest/") != std::string::npos);
  CHECK(result.export_results[1].find("/export/final/") != std::string::npos);
  // Each export records its evaluation and the identity.
  const ExportManifest final_manifest = ReadExport(result.export_results[1]).manifest;
  CHECK(final_manifest.metrics.at("mse") == Approx(result.at("mse")));
  CHECK(final_manifest.model == ModelIdentity{"regression", "3"});

  // A restarted job's best exporter knows the best from the event files: the evaluations of
  // steps 50 and 60 are not better than step 10's, and nothing is exported.
  Estimator restarted(RegressionModelFn, estimator.model_dir(), EveryTenSteps());
  TrainAndEvaluateResult more = train_and_evaluate(
      restarted, TrainSpec(Input()).max_steps(60),
      EvalSpec(Input()).steps(2).throttle_secs(0).exporters(
          {BestExporter("best", options, [](const EvalResult& best, const EvalResult& current) {
            return current.at("global_step") < best.at("global_step");
          })}));
  CHECK(more.export_results.empty());
  CHECK((ExportedSteps(restarted, "best") == std::vector<int64_t>{10}));
}

TEST_CASE("the best exporter with TensorFlow's default exports each evaluation of a lower loss",
          "[estimator][export]") {
  Estimator estimator(RegressionModelFn, est::testing::FreshTempDir("tae_best_loss").string(), EveryTenSteps());
  train_and_evaluate(estimator, TrainSpec(Input()).max_steps(30),
                     EvalSpec(Input()).steps(std::nullopt).throttle_secs(0).exporters(
                         {BestExporter("best", ExporterOptions(RegressionServing))}));
  // Which evaluations had a lower loss than every earlier one, from the event files.
  std::vector<int64_t> improved;
  double best = std::numeric_limits<double>::infinity();
  for (const auto& [step, metrics] : ReadEvalMetrics(estimator.eval_dir())) {
    if (metrics.at("loss") < best) improved.push_back(step);
    best = std::min(best, metrics.at("loss"));
  }
  REQUIRE(!improved.empty());
  CHECK(ExportedSteps(estimator, "best") == improved);
}

TEST_CASE("bad exporters are refused, naming what is wrong", "[estimator][export]") {
  const ExporterOptions options(RegressionServing);
  auto message = [](const std::function<void()>& make) { return est::testing::ErrorMessageOf<ConfigError>(make); };
  CHECK_THAT(message([&] { LatestExporter("a/b", options); }), Catch::Contains("exporter name 'a/b'"));
  CHECK_THAT(message([&] { LatestExporter("..", options); }), Catch::Contains("exporter name '..'"));
  CHECK_THAT(message([&] { LatestExporter("latest", ExporterOptions(nullptr)); }),
             Catch::Contains("has no serving_input_fn"));
  CHECK_THAT(message([&] { LatestExporter("latest", ExporterOptions(options).exports_to_keep(0)); }),
             Catch::Contains("exports_to_keep must be at least 1, got 0"));
  Estimator estimator(RegressionModelFn, est::testing::FreshTempDir("tae_bad_exporters").string(), EveryTenSteps());
  CHECK_THAT(message([&] {
               train_and_evaluate(estimator, TrainSpec(Input()).max_steps(10),
                                  EvalSpec(Input()).exporters({FinalExporter("x", options), LatestExporter("x", options)}));
             }),
             Catch::Contains("two exporters are named 'x'"));
}
