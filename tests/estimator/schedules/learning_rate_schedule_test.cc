#include "estimator/schedules/learning_rate_schedule.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <string>

#include "common/error.h"
#include "estimator/schedules/decay_schedules.h"
#include "estimator/schedules/schedule_text.h"
#include "tests/test_util.h"

using namespace est;
using namespace est::schedules;

namespace {

struct TensorFlowValue {
  const char* schedule;
  int64_t step;
  double learning_rate;
};

// What TensorFlow 2.15's schedules give, in float64 (make_tensorflow_schedules.py).
const TensorFlowValue kTensorFlowValues[] = {
#include "tests/estimator/schedules/tensorflow_schedule_values.inc"
};

// Ours, with the parameters of the script's case of the same name.
std::map<std::string, LearningRateSchedule> OurSchedules() {
  std::map<std::string, LearningRateSchedule> schedules;
  schedules.emplace("piecewise", PiecewiseConstantDecay({100, 200}, {1.0, 0.5, 0.1}));
  schedules.emplace("exponential", ExponentialDecay(0.1, 100, 0.96));
  schedules.emplace("exponential_staircase", ExponentialDecay(0.1, 100, 0.96, /*staircase=*/true));
  schedules.emplace("polynomial", PolynomialDecay(0.1, 100, 0.001, /*power=*/2.0));
  schedules.emplace("polynomial_cycle", PolynomialDecay(0.1, 100, 0.001, /*power=*/0.5, /*cycle=*/true));
  schedules.emplace("inverse_time", InverseTimeDecay(0.1, 10, 0.5));
  schedules.emplace("inverse_time_staircase", InverseTimeDecay(0.1, 10, 0.5, /*staircase=*/true));
  schedules.emplace("cosine", CosineDecay(0.1, 100, /*alpha=*/0.1));
  schedules.emplace("cosine_restarts", CosineDecayRestarts(0.1, 10, /*t_mul=*/2.0, /*m_mul=*/0.9, /*alpha=*/0.05));
  schedules.emplace("cosine_restarts_even", CosineDecayRestarts(0.1, 10, /*t_mul=*/1.0, /*m_mul=*/0.5));
  schedules.emplace("warmup_cosine", LinearWarmup(CosineDecay(0.1, 100, /*alpha=*/0.1), 20, 0.01));
  return schedules;
}

}  // namespace

TEST_CASE("Each schedule gives TensorFlow's learning rate at every tabulated step", "[schedules]") {
  const std::map<std::string, LearningRateSchedule> ours = OurSchedules();
  std::map<std::string, int> compared;
  for (const TensorFlowValue& expected : kTensorFlowValues) {
    INFO(expected.schedule << " at step " << expected.step);
    const auto schedule = ours.find(expected.schedule);
    REQUIRE(schedule != ours.end());
    CHECK(schedule->second(expected.step) ==
          Approx(expected.learning_rate).epsilon(1e-13).margin(1e-16));
    ++compared[expected.schedule];
  }
  // Every schedule of ours was compared, at several steps.
  CHECK(compared.size() == ours.size());
  for (const auto& [name, count] : compared) {
    INFO(name);
    CHECK(count >= 6);
  }
}

TEST_CASE("A schedule depends on the step alone", "[schedules]") {
  const LearningRateSchedule schedule = LinearWarmup(CosineDecayRestarts(0.2, 7), 5, 0.0);
  // In any order, and again: the same rate for the same step.
  for (int64_t step : {3, 40, 0, 12, 3, 40})
    CHECK(schedule(step) == LinearWarmup(CosineDecayRestarts(0.2, 7), 5, 0.0)(step));
  CHECK(schedule(0) == 0.0);
  CHECK(schedule(5) == Approx(0.2));
  CHECK(Constant(0.25)(123456789) == 0.25);
  CHECK_THAT(CosineDecay(0.1, 10).description(), Catch::Equals("CosineDecay(initial_learning_rate=0.1, "
                                                               "decay_steps=10, alpha=0)"));
}

TEST_CASE("Schedules refuse parameters out of range, naming them", "[schedules]") {
  auto message = [](const std::function<void()>& make) { return testing::ErrorMessageOf<ConfigError>(make); };
  CHECK_THAT(message([] { ExponentialDecay(0.1, -5, 0.9); }),
             Catch::Contains("ExponentialDecay: decay_steps is -5; expected a number of steps > 0"));
  CHECK_THAT(message([] { CosineDecay(0.1, 0); }), Catch::Contains("CosineDecay: decay_steps is 0"));
  CHECK_THAT(message([] { LinearWarmup(Constant(0.1), -1); }),
             Catch::Contains("LinearWarmup: warmup_steps is -1; expected a number of steps > 0"));
  CHECK_THAT(message([] { Constant(-0.1); }),
             Catch::Contains("Constant: learning_rate is -0.1; expected a finite learning rate >= 0"));
  CHECK_THAT(message([] { Constant(std::nan("")); }), Catch::Contains("Constant: learning_rate is nan"));
  CHECK_THAT(message([] { CosineDecay(0.1, 10, 1.5); }),
             Catch::Contains("CosineDecay: alpha is 1.5; expected a finite number in [0, 1]"));
  CHECK_THAT(message([] { CosineDecayRestarts(0.1, 10, 0.5); }), Catch::Contains("t_mul is 0.5"));
  CHECK_THAT(message([] { PiecewiseConstantDecay({10, 10}, {1, 2, 3}); }),
             Catch::Contains("boundaries [10, 10] must increase strictly, but 10 is followed by 10"));
  CHECK_THAT(message([] { PiecewiseConstantDecay({10}, {1}); }),
             Catch::Contains("1 boundaries need 2 values, got 1"));
  CHECK_THAT(message([] { PolynomialDecay(0.1, 10, 0.0, -1.0); }), Catch::Contains("power is -1"));
  CHECK_THAT(message([] { Constant(0.1)(-3); }), Catch::Contains("asked for step -3; steps are >= 0"));
  CHECK_THAT(message([] { LearningRateSchedule("Mine", [](int64_t) { return -1.0; })(4); }),
             Catch::Contains("Mine gave -1 at step 4; a learning rate must be finite and >= 0"));
}

TEST_CASE("Schedules written as text are the schedules of the same name and parameters", "[schedules]") {
  auto same = [](const std::string& text, const LearningRateSchedule& expected) {
    INFO(text);
    const LearningRateSchedule parsed = ParseLearningRateSchedule(text, 0.5);
    CHECK(parsed.description() == expected.description());
    for (int64_t step : {0, 1, 7, 100, 2500}) CHECK(parsed(step) == expected(step));
  };
  same("Constant", Constant(0.5));
  same("Constant(learning_rate=0.25)", Constant(0.25));
  same("CosineDecay(decay_steps=2000, alpha=0.1)", CosineDecay(0.5, 2000, 0.1));
  same(" CosineDecay ( initial_learning_rate = 1e-3 , decay_steps = 10 ) ", CosineDecay(0.001, 10));
  same("ExponentialDecay(decay_steps=100, decay_rate=0.9, staircase=True)", ExponentialDecay(0.5, 100, 0.9, true));
  same("PolynomialDecay(decay_steps=50, end_learning_rate=0.01, power=2, cycle=true)",
       PolynomialDecay(0.5, 50, 0.01, 2.0, true));
  same("InverseTimeDecay(decay_steps=10, decay_rate=0.5)", InverseTimeDecay(0.5, 10, 0.5));
  same("CosineDecayRestarts(first_decay_steps=30, t_mul=1.5, m_mul=0.8, alpha=0.01)",
       CosineDecayRestarts(0.5, 30, 1.5, 0.8, 0.01));
  same("PiecewiseConstantDecay(boundaries=[1000, 2000], values=[0.1, 0.01, 0.001])",
       PiecewiseConstantDecay({1000, 2000}, {0.1, 0.01, 0.001}));
  // Positional arguments, in TensorFlow's order, as Python takes them; then keywords.
  same("CosineDecay(0.1, 100)", CosineDecay(0.1, 100));
  same("CosineDecay(0.1, 100, 0.2)", CosineDecay(0.1, 100, 0.2));
  same("ExponentialDecay(0.1, 100, 0.9, True)", ExponentialDecay(0.1, 100, 0.9, true));
  same("PolynomialDecay(0.1, decay_steps=50, power=2)", PolynomialDecay(0.1, 50, 0.0001, 2.0));
  same("PiecewiseConstantDecay([10], [0.1, 0.01])", PiecewiseConstantDecay({10}, {0.1, 0.01}));
  same("Constant(0.25)", Constant(0.25));
}

TEST_CASE("A schedule written as text says whether it starts from the rate given beside it", "[schedules]") {
  CHECK(ScheduleTakesInitialRate("CosineDecay(decay_steps=10)"));
  CHECK(ScheduleTakesInitialRate("Constant"));
  CHECK_FALSE(ScheduleTakesInitialRate("CosineDecay(0.1, 10)"));
  CHECK_FALSE(ScheduleTakesInitialRate("CosineDecay(decay_steps=10, initial_learning_rate=0.1)"));
  CHECK_FALSE(ScheduleTakesInitialRate("Constant(learning_rate=0.1)"));
  CHECK_FALSE(ScheduleTakesInitialRate("PiecewiseConstantDecay([10], [0.1, 0.01])"));
}

TEST_CASE("Schedules written as text refuse what they cannot read, saying what was expected", "[schedules]") {
  auto message = [](const std::string& text) {
    return testing::ErrorMessageOf<ConfigError>([&] { ParseLearningRateSchedule(text, 0.1); });
  };
  CHECK_THAT(message("Cosine(decay_steps=5)"),
             Catch::Contains("unknown schedule 'Cosine'; expected one of Constant, CosineDecay, CosineDecayRestarts, "
                             "ExponentialDecay, InverseTimeDecay, PiecewiseConstantDecay, PolynomialDecay"));
  CHECK_THAT(message("CosineDecay(alpha=0.1)"),
             Catch::Contains("CosineDecay: decay_steps is required; it takes initial_learning_rate, decay_steps, alpha"));
  CHECK_THAT(message("CosineDecay(decay_steps=10, beta=2)"), Catch::Contains("CosineDecay: unknown parameter 'beta'"));
  CHECK_THAT(message("CosineDecay(decay_steps=10.5)"),
             Catch::Contains("decay_steps is 10.5; expected a whole number of steps"));
  CHECK_THAT(message("CosineDecay(decay_steps=-10)"), Catch::Contains("decay_steps is -10; expected a number of steps > 0"));
  CHECK_THAT(message("CosineDecay(decay_steps=10"), Catch::Contains("expected ')' at column 27"));
  CHECK_THAT(message("CosineDecay(decay_steps=10, decay_steps=20)"), Catch::Contains("expected 'decay_steps' given once"));
  CHECK_THAT(message("ExponentialDecay(decay_steps=10, decay_rate=0.5, staircase=1)"),
             Catch::Contains("ExponentialDecay: staircase must be true or false"));
  CHECK_THAT(message("PiecewiseConstantDecay(boundaries=5, values=[1, 2])"),
             Catch::Contains("boundaries must be a list, e.g. [1000, 2000]"));
  CHECK_THAT(message("CosineDecay(decay_steps=nan)"), Catch::Contains("expected a finite number at column 25"));
  CHECK_THAT(message(""), Catch::Contains("expected a schedule's name at column 1"));
  CHECK_THAT(message("CosineDecay(decay_steps=10, 0.1)"),
             Catch::Contains("expected a keyword argument (name=value): a positional argument follows a keyword one "
                             "at column 29"));
  CHECK_THAT(message("CosineDecay(0.1, 10, 0.0, 4)"),
             Catch::Contains("expected CosineDecay's 3 parameters at most at column 27"));
  CHECK_THAT(message("CosineDecay(0.1, 10, decay_steps=20)"), Catch::Contains("expected 'decay_steps' given once"));
  // A rate beyond a float's range cannot be written to TensorBoard, nor applied as one.
  CHECK_THAT(message("Constant(learning_rate=1e308)"),
             Catch::Contains("Constant: learning_rate is 1e+308; expected a finite learning rate >= 0, at most "
                             "3.40282e+38 (the largest float)"));
}
