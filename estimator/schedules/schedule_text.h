#pragma once
/// Learning-rate schedules written as text, as a TensorFlow user writes the schedule in
/// Python: `CosineDecay(decay_steps=2000, alpha=0.1)`, `Constant`,
/// `PiecewiseConstantDecay(boundaries=[1000, 2000], values=[0.1, 0.01, 0.001])`.
/// What est-train's --lr-schedule takes.

#include <string>

#include "estimator/schedules/learning_rate_schedule.h"

namespace est::schedules {

/// The schedule `text` names: a schedule of decay_schedules.h (or Constant) by its name,
/// with its parameters as Python passes them (numbers, true/false, [lists]): positional
/// arguments in TensorFlow's order (CosineDecay(0.1, 2000)), then keyword arguments. An omitted
/// initial_learning_rate (Constant: learning_rate) is `initial_learning_rate`; other omitted
/// parameters take their defaults. A ConfigError names what is wrong and what was expected.
LearningRateSchedule ParseLearningRateSchedule(const std::string& text, double initial_learning_rate);

/// Whether the schedule `text` names starts from ParseLearningRateSchedule's
/// initial_learning_rate: it omits its own (initial_learning_rate; Constant's learning_rate),
/// and is not PiecewiseConstantDecay, whose values give every rate. ConfigError as
/// ParseLearningRateSchedule's.
bool ScheduleTakesInitialRate(const std::string& text);

/// The names ParseLearningRateSchedule knows, for help texts: "Constant, CosineDecay, ...".
std::string LearningRateScheduleNames();

}  // namespace est::schedules
