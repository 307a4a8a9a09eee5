#include "estimator/schedules/set_learning_rate.h"

#include <c10/util/Exception.h>
#include <torch/optim/optimizer.h>

#include "common/error.h"

namespace est::schedules {

double SetLearningRate(torch::optim::Optimizer& optimizer, const LearningRateSchedule& schedule,
                       int64_t global_step) {
  const double rate = schedule(global_step);
  for (auto& group : optimizer.param_groups()) {
    try {
      group.options().set_lr(rate);
    } catch (const c10::Error&) {
      EST_THROW(ModelError, "learning-rate schedule ", schedule.description(),
                " cannot set the optimizer's learning rate: its options do not implement "
                "torch::optim::OptimizerOptions::set_lr (LibTorch's own optimizers do; override set_lr and "
                "get_lr in your optimizer's options)");
    }
  }
  return rate;
}

}  // namespace est::schedules
