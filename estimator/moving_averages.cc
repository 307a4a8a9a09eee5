#include "estimator/moving_averages.h"

#include <ATen/ATen.h>
#include <torch/utils.h>

#include <algorithm>
#include <utility>

#include "checkpoint/checkpoint_reader.h"
#include "common/error.h"

namespace est {

MovingAverages::MovingAverages(MovingAverageOptions options,
                               std::shared_ptr<const checkpoint::CheckpointReader> resume_from)
    : options_(options), resume_from_(std::move(resume_from)) {
  options_.validate();
}

void MovingAverages::track(const NamedTensors& variables) {
  torch::NoGradGuard no_grad;
  for (const auto& [name, variable] : variables) {
    if (!variable.requires_grad()) continue;
    const std::string key = name + kMovingAverageSuffix;
    at::Tensor average;
    if (resume_from_ && resume_from_->has_tensor(key)) {
      average = resume_from_->tensor(key).to(variable.device());
      EST_CHECK(average.sizes() == variable.sizes() && average.scalar_type() == variable.scalar_type(),
                CheckpointError, "checkpoint ", resume_from_->prefix(), " holds '", key, "' as ",
                average.scalar_type(), " ", average.sizes(), ", but variable '", name, "' is ", variable.scalar_type(),
                " ", variable.sizes());
    } else {
      average = variable.detach().clone();
    }
    shadows_.push_back({name, variable, std::move(average)});
  }
}

void MovingAverages::update(int64_t global_step) {
  double decay = options_.decay();
  if (options_.num_updates()) {
    const double n = static_cast<double>(global_step);
    decay = std::min(decay, (1.0 + n) / (10.0 + n));
  }
  torch::NoGradGuard no_grad;
  for (Shadow& shadow : shadows_) shadow.average.sub_((shadow.average - shadow.variable).mul_(1.0 - decay));
}

void MovingAverages::append_to(NamedTensors& tensors) const {
  for (const Shadow& shadow : shadows_) tensors.emplace_back(shadow.name + kMovingAverageSuffix, shadow.average);
}

}  // namespace est
