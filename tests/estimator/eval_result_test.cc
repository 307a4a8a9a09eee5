// EvalResult: reading a metric never inserts one, and a missing one is a ModelError that says
// why.

#include "estimator/eval_result.h"

#include "common/error.h"
#include "tests/test_util.h"

#include <catch2/catch.hpp>

using namespace est;

TEST_CASE("EvalResult gives its metrics and names a missing one with the metrics present", "[estimator]") {
  const EvalResult result(std::map<std::string, double>{{"loss", 0.25}, {"mse", 0.5}, {"global_step", 30}});
  CHECK(result.evaluated());
  CHECK(result["mse"] == 0.5);
  CHECK(result.at("loss") == 0.25);
  CHECK_THROWS_MATCHES(result["accuracy"], ModelError,
                       est::testing::MessageMatches(Catch::Equals(
                           "no metric 'accuracy' in this evaluation's results; they hold 'global_step', 'loss', 'mse' "
                           "(model_fn's EstimatorSpec::Eval metrics, 'loss' and 'global_step')")));
  CHECK(result.size() == 3);
}

TEST_CASE("an EvalResult of a task that did not evaluate says which task does", "[estimator]") {
  const EvalResult result = EvalResult::NotEvaluated("worker 1 trains; the evaluator evaluates");
  CHECK_FALSE(result.evaluated());
  CHECK(result.empty());
  CHECK_THROWS_MATCHES(result["mse"], ModelError,
                       est::testing::MessageMatches(Catch::Equals(
                           "no metric 'mse' in the result of train_and_evaluate: worker 1 trains; the evaluator "
                           "evaluates. Check result.evaluated() before reading a metric")));
}
