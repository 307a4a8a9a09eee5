#pragma once
/// The parameter checks every learning-rate schedule shares: each names the schedule and
/// the parameter, as TensorFlow calls them, and the range expected.

#include <cstdint>

namespace est::schedules {

/// The largest learning rate: a float's largest, as summaries and float optimizers hold it.
inline constexpr double kMaxLearningRate = 3.4028234663852886e38;

/// A learning rate: finite, >= 0 and at most kMaxLearningRate.
void CheckRate(const char* schedule, const char* parameter, double value);
/// A number of steps: > 0.
void CheckSteps(const char* schedule, const char* parameter, int64_t value);
/// A finite number within [low, high].
void CheckWithin(const char* schedule, const char* parameter, double value, double low, double high);

}  // namespace est::schedules
