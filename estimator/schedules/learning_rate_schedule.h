#pragma once
/// LearningRateSchedule: a learning rate as a pure function of the global step
/// (tf.keras.optimizers.schedules.LearningRateSchedule), and linear warmup before any of them.

#include <cstdint>
#include <functional>
#include <string>

namespace est::schedules {

/// A learning rate for each global step. It depends on the step alone, so a job restored
/// at step N continues the schedule exactly where it stopped. Given to
/// EstimatorSpec::Train(...).learning_rate(schedule), the framework sets it on the
/// optimizer before every step and writes it to TensorBoard as `learning_rate`.
class LearningRateSchedule {
 public:
  /// The rate at a step (>= 0).
  using Function = std::function<double(int64_t step)>;

  /// A schedule computing `rate`; `description` names it and its parameters in logs and errors.
  LearningRateSchedule(std::string description, Function rate);

  /// The learning rate at global step `step`; a ConfigError when `step` is negative.
  double operator()(int64_t step) const;
  /// The schedule and its parameters, as TensorFlow names them ("CosineDecay(...)").
  const std::string& description() const { return description_; }

 private:
  std::string description_;
  Function rate_;
};

/// `learning_rate` at every step.
LearningRateSchedule Constant(double learning_rate);

/// `after_warmup` preceded by `warmup_steps` steps whose rate rises linearly from
/// `warmup_learning_rate` (at step 0) to after_warmup's rate at its own step 0, as Keras's
/// CosineDecay(warmup_target, warmup_steps) does: from step `warmup_steps` on, the rate is
/// after_warmup(step - warmup_steps), so the warmup's steps are not part of a decay's
/// decay_steps. (TF Model Garden's LinearWarmup instead continues the wrapped schedule at
/// the unshifted step.) `warmup_steps` must be positive.
LearningRateSchedule LinearWarmup(LearningRateSchedule after_warmup, int64_t warmup_steps,
                                  double warmup_learning_rate = 0.0);

}  // namespace est::schedules
