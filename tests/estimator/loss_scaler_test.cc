// DynamicLossScaler: exact scales, growth and backoff, and unscaled gradients.

#include <torch/torch.h>

#include <limits>

#include "common/error.h"
#include "estimator/loss_scaler.h"

#include <catch2/catch.hpp>

using namespace est;

namespace {

// A variable whose gradient is `gradient`.
torch::Tensor WithGradient(const torch::Tensor& gradient) {
  auto variable = torch::zeros_like(gradient).requires_grad_();
  variable.mutable_grad() = gradient.clone();
  return variable;
}

}  // namespace

TEST_CASE("DynamicLossScaler grows after growth_interval finite steps and backs off on a non-finite one",
          "[estimator][mixed_precision]") {
  DynamicLossScaler scaler(LossScaleOptions().initial_scale(1024).growth_interval(3));
  CHECK(scaler.scale() == 1024);
  scaler.update(true);
  scaler.update(true);
  CHECK(scaler.scale() == 1024);
  CHECK(scaler.good_steps() == 2);
  scaler.update(true);
  CHECK(scaler.scale() == 2048);
  CHECK(scaler.good_steps() == 0);
  scaler.update(true);
  scaler.update(false);
  CHECK(scaler.scale() == 1024);
  CHECK(scaler.good_steps() == 0);
  scaler.update(false);
  CHECK(scaler.scale() == 512);

  DynamicLossScaler custom(LossScaleOptions().initial_scale(100).growth_factor(3).backoff_factor(0.25).growth_interval(1));
  custom.update(true);
  CHECK(custom.scale() == 300);
  custom.update(false);
  CHECK(custom.scale() == 75);

  custom.restore(8, 0);
  CHECK(custom.scale() == 8);
  CHECK(custom.good_steps() == 0);
}

TEST_CASE("DynamicLossScaler never grows the scale to infinity", "[estimator][mixed_precision]") {
  const double largest = std::numeric_limits<double>::max();
  DynamicLossScaler scaler(LossScaleOptions().initial_scale(largest).growth_interval(1));
  scaler.update(true);
  CHECK(scaler.scale() == largest);
  CHECK(scaler.good_steps() == 0);
}

TEST_CASE("DynamicLossScaler scales the loss and divides gradients by the scale", "[estimator][mixed_precision]") {
  DynamicLossScaler scaler(LossScaleOptions().initial_scale(32768));
  CHECK(scaler.scale_loss(torch::tensor(0.75f)).item<float>() == 24576.0f);

  auto a = WithGradient(torch::tensor({1.0f, -3.0f, 0.5f}) * 32768);
  auto b = WithGradient(torch::tensor({{2.0, 4.0}}, torch::kDouble) * 32768);
  auto no_gradient = torch::zeros({2}).requires_grad_();
  CHECK(scaler.unscale({a, no_gradient, b}));
  CHECK(torch::equal(a.grad(), torch::tensor({1.0f, -3.0f, 0.5f})));
  CHECK(torch::equal(b.grad(), torch::tensor({{2.0, 4.0}}, torch::kDouble)));
  CHECK_FALSE(no_gradient.grad().defined());
  CHECK(scaler.unscale({}));

  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK_FALSE(scaler.unscale({WithGradient(torch::tensor({1.0f, inf})), WithGradient(torch::ones({3}))}));
  CHECK_FALSE(scaler.unscale({WithGradient(torch::ones({3})), WithGradient(torch::tensor({nan}))}));
  CHECK_FALSE(scaler.unscale({WithGradient(torch::tensor({-inf}))}));
}

TEST_CASE("LossScaleOptions out of range are a ConfigError naming the field", "[estimator][mixed_precision]") {
  CHECK_NOTHROW(LossScaleOptions().validate());
  CHECK_THROWS_WITH(DynamicLossScaler(LossScaleOptions().initial_scale(0)),
                    Catch::Contains("initial_scale must be positive and finite, got 0"));
  CHECK_THROWS_WITH(LossScaleOptions().initial_scale(std::numeric_limits<double>::infinity()).validate(),
                    Catch::Contains("initial_scale must be positive and finite"));
  CHECK_THROWS_WITH(LossScaleOptions().growth_factor(1).validate(), Catch::Contains("growth_factor must be > 1, got 1"));
  CHECK_THROWS_WITH(LossScaleOptions().backoff_factor(1).validate(),
                    Catch::Contains("backoff_factor must be in (0, 1), got 1"));
  CHECK_THROWS_WITH(LossScaleOptions().backoff_factor(0).validate(), Catch::Contains("backoff_factor must be in (0, 1)"));
  CHECK_THROWS_WITH(LossScaleOptions().growth_interval(0).validate(),
                    Catch::Contains("growth_interval must be positive, got 0"));
  CHECK_THROWS_AS(LossScaleOptions().growth_interval(-1).validate(), ConfigError);
}
