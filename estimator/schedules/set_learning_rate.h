#pragma once
/// Sets an optimizer's learning rate from a schedule: what the training loop does before
/// each step for EstimatorSpec::learning_rate.

#include <cstdint>

#include "estimator/schedules/learning_rate_schedule.h"

namespace torch::optim {
class Optimizer;
}

namespace est::schedules {

/// Sets the learning rate of every parameter group of `optimizer` to `schedule(global_step)`
/// and returns it. A ModelError when the optimizer's options do not implement set_lr.
double SetLearningRate(torch::optim::Optimizer& optimizer, const LearningRateSchedule& schedule,
                       int64_t global_step);

}  // namespace est::schedules
