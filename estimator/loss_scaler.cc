#include "estimator/loss_scaler.h"

#include <ATen/ATen.h>

#include <cmath>

#include "common/error.h"

namespace est {

DynamicLossScaler::DynamicLossScaler(LossScaleOptions options) : options_(options), scale_(options.initial_scale()) {
  options_.validate();
}

void DynamicLossScaler::restore(double scale, int64_t good_steps) {
  EST_ASSERT(scale > 0 && std::isfinite(scale) && good_steps >= 0, "a loss scale state to restore is valid");
  scale_ = scale;
  good_steps_ = good_steps;
}

at::Tensor DynamicLossScaler::scale_loss(const at::Tensor& loss) const { return loss * scale_; }

bool DynamicLossScaler::unscale(const std::vector<at::Tensor>& variables) const {
  std::vector<at::Tensor> gradients;
  for (const at::Tensor& variable : variables)
    if (variable.grad().defined()) gradients.push_back(variable.grad());
  if (gradients.empty()) return true;
  const bool fused = gradients.front().is_cuda();
  if (fused) {
    // One kernel for every gradient of a CUDA device, as torch.cuda.amp.GradScaler uses.
    const auto options = gradients.front().options().dtype(at::kFloat);
    at::Tensor found_inf = at::zeros({1}, options);
    const at::Tensor inverse = at::full({1}, 1.0 / scale_, options);
    at::_amp_foreach_non_finite_check_and_unscale_(gradients, found_inf, inverse);
    return found_inf.item<float>() == 0.0f;
  }
  std::vector<at::Tensor> finite;
  finite.reserve(gradients.size());
  for (at::Tensor& gradient : gradients) {
    gradient.div_(scale_);
    finite.push_back(at::isfinite(gradient).all());
  }
  return at::stack(finite).all().item<bool>();
}

void DynamicLossScaler::update(bool finite) {
  if (!finite) {
    scale_ *= options_.backoff_factor();
    good_steps_ = 0;
    return;
  }
  if (++good_steps_ < options_.growth_interval()) return;
  const double grown = scale_ * options_.growth_factor();
  if (std::isfinite(grown)) scale_ = grown;  // as TensorFlow, the scale never becomes infinite
  good_steps_ = 0;
}

}  // namespace est
