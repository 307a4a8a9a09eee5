#pragma once
/// TensorFlow's learning-rate decays (tf.keras.optimizers.schedules), with their names,
/// parameters, defaults and formulas. Every parameter is checked when the schedule is made:
/// a ConfigError names the one at fault and the range expected.

#include <cstdint>
#include <vector>

#include "estimator/schedules/learning_rate_schedule.h"

namespace est::schedules {

/// values[0] up to and including step boundaries[0], values[i] for steps in
/// (boundaries[i-1], boundaries[i]], values.back() after the last boundary. The boundaries
/// increase strictly; there is one value more than boundaries.
LearningRateSchedule PiecewiseConstantDecay(std::vector<int64_t> boundaries, std::vector<double> values);

/// initial_learning_rate * decay_rate ^ (step / decay_steps); with `staircase` the exponent
/// is an integer (floor).
LearningRateSchedule ExponentialDecay(double initial_learning_rate, int64_t decay_steps, double decay_rate,
                                      bool staircase = false);

/// (initial - end) * (1 - step / decay_steps) ^ power + end, the step held at decay_steps
/// afterwards; with `cycle`, decay_steps is the first multiple of itself not below the
/// step, and the decay restarts.
LearningRateSchedule PolynomialDecay(double initial_learning_rate, int64_t decay_steps,
                                     double end_learning_rate = 0.0001, double power = 1.0, bool cycle = false);

/// initial_learning_rate / (1 + decay_rate * step / decay_steps); with `staircase` the ratio
/// step / decay_steps is an integer (floor).
LearningRateSchedule InverseTimeDecay(double initial_learning_rate, int64_t decay_steps, double decay_rate,
                                      bool staircase = false);

/// Cosine decay over decay_steps from initial_learning_rate down to
/// alpha * initial_learning_rate, which it keeps afterwards (Loshchilov & Hutter's SGDR
/// without restarts). For a warmup first, LinearWarmup(CosineDecay(...), warmup_steps).
LearningRateSchedule CosineDecay(double initial_learning_rate, int64_t decay_steps, double alpha = 0.0);

/// Cosine decay with warm restarts (SGDR): the first period lasts first_decay_steps, each
/// next one t_mul times the one before, and starts at m_mul times the one before's
/// initial rate; each decays to alpha times the initial rate.
LearningRateSchedule CosineDecayRestarts(double initial_learning_rate, int64_t first_decay_steps, double t_mul = 2.0,
                                         double m_mul = 1.0, double alpha = 0.0);

}  // namespace est::schedules
