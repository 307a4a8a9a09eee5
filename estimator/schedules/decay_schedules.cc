#include "estimator/schedules/decay_schedules.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "common/error.h"
#include "estimator/schedules/schedule_checks.h"

namespace est::schedules {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kUnbounded = std::numeric_limits<double>::max();

template <typename Values>
std::string JoinValues(const Values& values) {
  std::string text;
  for (const auto& value : values) text += (text.empty() ? "" : ", ") + Concat(value);
  return "[" + text + "]";
}

// The cosine factor of CosineDecay at `fraction` of the decay, with floor `alpha`.
double CosineFactor(double fraction, double alpha, double multiplier = 1.0) {
  const double cosine = 0.5 * multiplier * (1.0 + std::cos(kPi * fraction));
  return (1.0 - alpha) * cosine + alpha;
}

// step / decay_steps, whole decays only (floor) with `staircase`.
double DecayProgress(int64_t step, int64_t decay_steps, bool staircase) {
  const double progress = static_cast<double>(step) / static_cast<double>(decay_steps);
  return staircase ? std::floor(progress) : progress;
}

// Checks the parameters of ExponentialDecay or InverseTimeDecay (`schedule`), which share
// them, and returns the schedule's description.
std::string CheckRateDecay(const char* schedule, double initial_learning_rate, int64_t decay_steps, double decay_rate,
                           bool staircase) {
  CheckRate(schedule, "initial_learning_rate", initial_learning_rate);
  CheckSteps(schedule, "decay_steps", decay_steps);
  CheckWithin(schedule, "decay_rate", decay_rate, 0.0, kUnbounded);
  return Concat(schedule, "(initial_learning_rate=", initial_learning_rate, ", decay_steps=", decay_steps,
                ", decay_rate=", decay_rate, ", staircase=", staircase ? "true" : "false", ")");
}

}  // namespace

LearningRateSchedule PiecewiseConstantDecay(std::vector<int64_t> boundaries, std::vector<double> values) {
  EST_CHECK(values.size() == boundaries.size() + 1, ConfigError, "PiecewiseConstantDecay: ", boundaries.size(),
            " boundaries need ", boundaries.size() + 1, " values, got ", values.size());
  for (size_t i = 1; i < boundaries.size(); ++i)
    EST_CHECK(boundaries[i - 1] < boundaries[i], ConfigError, "PiecewiseConstantDecay: boundaries ",
              JoinValues(boundaries), " must increase strictly, but ", boundaries[i - 1], " is followed by ",
              boundaries[i]);
  for (double value : values) CheckRate("PiecewiseConstantDecay", "a value", value);
  std::string description = "PiecewiseConstantDecay(boundaries=" + JoinValues(boundaries) +
                            ", values=" + JoinValues(values) + ")";
  return LearningRateSchedule(std::move(description), [boundaries = std::move(boundaries),
                                                       values = std::move(values)](int64_t step) {
    // The first boundary not below the step: steps up to and including a boundary take its value.
    const auto at = std::lower_bound(boundaries.begin(), boundaries.end(), step);
    return values[static_cast<size_t>(at - boundaries.begin())];
  });
}

LearningRateSchedule ExponentialDecay(double initial_learning_rate, int64_t decay_steps, double decay_rate,
                                      bool staircase) {
  std::string description =
      CheckRateDecay("ExponentialDecay", initial_learning_rate, decay_steps, decay_rate, staircase);
  return LearningRateSchedule(std::move(description), [=](int64_t step) {
    return initial_learning_rate * std::pow(decay_rate, DecayProgress(step, decay_steps, staircase));
  });
}

LearningRateSchedule PolynomialDecay(double initial_learning_rate, int64_t decay_steps, double end_learning_rate,
                                     double power, bool cycle) {
  CheckRate("PolynomialDecay", "initial_learning_rate", initial_learning_rate);
  CheckSteps("PolynomialDecay", "decay_steps", decay_steps);
  CheckRate("PolynomialDecay", "end_learning_rate", end_learning_rate);
  CheckWithin("PolynomialDecay", "power", power, 0.0, kUnbounded);
  std::string description = Concat("PolynomialDecay(initial_learning_rate=", initial_learning_rate,
                                   ", decay_steps=", decay_steps, ", end_learning_rate=", end_learning_rate,
                                   ", power=", power, ", cycle=", cycle ? "true" : "false", ")");
  return LearningRateSchedule(std::move(description), [=](int64_t step) {
    double at = static_cast<double>(step);
    double steps = static_cast<double>(decay_steps);
    if (cycle) {
      steps *= step == 0 ? 1.0 : std::ceil(at / steps);
    } else {
      at = std::min(at, steps);
    }
    return (initial_learning_rate - end_learning_rate) * std::pow(1.0 - at / steps, power) + end_learning_rate;
  });
}

LearningRateSchedule InverseTimeDecay(double initial_learning_rate, int64_t decay_steps, double decay_rate,
                                      bool staircase) {
  std::string description =
      CheckRateDecay("InverseTimeDecay", initial_learning_rate, decay_steps, decay_rate, staircase);
  return LearningRateSchedule(std::move(description), [=](int64_t step) {
    return initial_learning_rate / (1.0 + decay_rate * DecayProgress(step, decay_steps, staircase));
  });
}

LearningRateSchedule CosineDecay(double initial_learning_rate, int64_t decay_steps, double alpha) {
  CheckRate("CosineDecay", "initial_learning_rate", initial_learning_rate);
  CheckSteps("CosineDecay", "decay_steps", decay_steps);
  CheckWithin("CosineDecay", "alpha", alpha, 0.0, 1.0);
  std::string description = Concat("CosineDecay(initial_learning_rate=", initial_learning_rate,
                                   ", decay_steps=", decay_steps, ", alpha=", alpha, ")");
  return LearningRateSchedule(std::move(description), [=](int64_t step) {
    const double steps = static_cast<double>(decay_steps);
    return initial_learning_rate * CosineFactor(std::min(static_cast<double>(step), steps) / steps, alpha);
  });
}

LearningRateSchedule CosineDecayRestarts(double initial_learning_rate, int64_t first_decay_steps, double t_mul,
                                         double m_mul, double alpha) {
  CheckRate("CosineDecayRestarts", "initial_learning_rate", initial_learning_rate);
  CheckSteps("CosineDecayRestarts", "first_decay_steps", first_decay_steps);
  // Periods that shrink (t_mul < 1) add up to a finite number of steps, after which
  // TensorFlow's formula has no period left (NaN).
  CheckWithin("CosineDecayRestarts", "t_mul", t_mul, 1.0, kUnbounded);
  CheckWithin("CosineDecayRestarts", "m_mul", m_mul, 0.0, kUnbounded);
  CheckWithin("CosineDecayRestarts", "alpha", alpha, 0.0, 1.0);
  std::string description = Concat("CosineDecayRestarts(initial_learning_rate=", initial_learning_rate,
                                   ", first_decay_steps=", first_decay_steps, ", t_mul=", t_mul,
                                   ", m_mul=", m_mul, ", alpha=", alpha, ")");
  return LearningRateSchedule(std::move(description), [=](int64_t step) {
    double fraction = static_cast<double>(step) / static_cast<double>(first_decay_steps);
    double restart = 0;
    if (t_mul == 1.0) {
      restart = std::floor(fraction);
      fraction -= restart;
    } else {
      // Period i lasts t_mul^i first periods; those before it sum to (1 - t_mul^i) / (1 - t_mul).
      restart = std::floor(std::log(1.0 - fraction * (1.0 - t_mul)) / std::log(t_mul));
      const double before = (1.0 - std::pow(t_mul, restart)) / (1.0 - t_mul);
      fraction = (fraction - before) / std::pow(t_mul, restart);
    }
    return initial_learning_rate * CosineFactor(fraction, alpha, std::pow(m_mul, restart));
  });
}

}  // namespace est::schedules
