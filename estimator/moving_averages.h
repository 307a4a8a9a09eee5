#pragma once
/// MovingAverages: the shadow values of RunConfig::moving_average during one training run,
/// kept on the chief (which writes the checkpoints). Internal to the estimator.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "estimator/model_context.h"
#include "estimator/moving_average.h"

namespace est {
namespace checkpoint {
class CheckpointReader;
}

/// The moving average of each trainable variable of replica 0.
class MovingAverages {
 public:
  /// `resume_from`: the checkpoint the run continues, whose moving averages it continues
  /// (null when it starts afresh or warm-starts).
  MovingAverages(MovingAverageOptions options, std::shared_ptr<const checkpoint::CheckpointReader> resume_from);

  /// Called with new variables holding their training values: each trainable one gets a
  /// shadow, the checkpoint's when it has one, else a copy of its value.
  void track(const NamedTensors& variables);
  /// After a step was applied, `global_step` the step it made: every shadow moves toward its
  /// variable.
  void update(int64_t global_step);
  /// Appends each shadow to `tensors` under "<variable>/ExponentialMovingAverage".
  void append_to(NamedTensors& tensors) const;

 private:
  struct Shadow {
    std::string name;
    at::Tensor variable;
    at::Tensor average;
  };

  MovingAverageOptions options_;
  std::shared_ptr<const checkpoint::CheckpointReader> resume_from_;
  std::vector<Shadow> shadows_;
};

}  // namespace est
