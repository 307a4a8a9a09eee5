#pragma once
// What est-train's flags add to a built-in model's training: a learning-rate schedule
// (--lr-schedule, --warmup-steps) and gradient clipping (--clip-norm), as a model_fn of a
// user would set them on EstimatorSpec::Train.

#include <optional>

#include "estimator/model_fn.h"
#include "estimator/schedules/learning_rate_schedule.h"

namespace est_train {

/// The training recipe of est-train's flags; an unset part leaves the model's own.
struct TrainingOptions {
  std::optional<est::schedules::LearningRateSchedule> learning_rate;
  std::optional<double> clip_norm;
};

/// `model_fn` whose training specs also carry `options`; `model_fn` itself when they are empty.
est::ModelFn WithTrainingOptions(est::ModelFn model_fn, TrainingOptions options);

}  // namespace est_train
