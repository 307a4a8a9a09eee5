#include "estimator/schedules/learning_rate_schedule.h"

#include <cmath>
#include <utility>

#include "common/error.h"
#include "estimator/schedules/schedule_checks.h"

namespace est::schedules {

LearningRateSchedule::LearningRateSchedule(std::string description, Function rate)
    : description_(std::move(description)), rate_(std::move(rate)) {
  EST_CHECK(rate_ != nullptr, ConfigError, "learning-rate schedule ", description_, " has no function");
}

double LearningRateSchedule::operator()(int64_t step) const {
  EST_CHECK(step >= 0, ConfigError, "learning-rate schedule ", description_, " asked for step ", step,
            "; steps are >= 0");
  const double rate = rate_(step);
  EST_CHECK(std::isfinite(rate) && rate >= 0 && rate <= kMaxLearningRate, ConfigError, "learning-rate schedule ",
            description_, " gave ", rate, " at step ", step, "; a learning rate must be finite and >= 0, at most ",
            kMaxLearningRate, " (the largest float)");
  return rate;
}

LearningRateSchedule Constant(double learning_rate) {
  CheckRate("Constant", "learning_rate", learning_rate);
  return LearningRateSchedule(Concat("Constant(", learning_rate, ")"),
                              [learning_rate](int64_t) { return learning_rate; });
}

LearningRateSchedule LinearWarmup(LearningRateSchedule after_warmup, int64_t warmup_steps,
                                  double warmup_learning_rate) {
  CheckSteps("LinearWarmup", "warmup_steps", warmup_steps);
  CheckRate("LinearWarmup", "warmup_learning_rate", warmup_learning_rate);
  const double target = after_warmup(0);
  std::string description = Concat("LinearWarmup(", after_warmup.description(), ", warmup_steps=",
                                   warmup_steps, ", warmup_learning_rate=", warmup_learning_rate, ")");
  return LearningRateSchedule(std::move(description), [=](int64_t step) {
    if (step >= warmup_steps) return after_warmup(step - warmup_steps);
    const double completed = static_cast<double>(step) / static_cast<double>(warmup_steps);
    return (target - warmup_learning_rate) * completed + warmup_learning_rate;
  });
}

}  // namespace est::schedules
