// The canned estimators' optimizers by name: one step of each from a known variable and gradient
// equals the Keras optimizer's update TensorFlow 2.15's canned estimators make of the name.

#include "estimator/canned/optimizer_spec.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <memory>

#include "common/error.h"
#include "estimator/model_context.h"

using est::canned::MakeOptimizer;
using est::canned::OptimizerSpec;

namespace {

constexpr double kLr = 0.1;
constexpr double kVariable = 1.0;
constexpr double kGradient = 0.5;

/// The variable after one step of `spec`'s optimizer from kVariable with gradient kGradient.
double OneStep(const OptimizerSpec& spec) {
  est::ModelContext ctx(std::make_shared<const nlohmann::json>(nlohmann::json::object()), c10::Device("cpu"), {});
  auto module = ctx.module("model", [] {
    auto made = std::make_shared<torch::nn::Module>();
    made->register_parameter("w", at::full({1}, kVariable, at::kDouble));
    return made;
  });
  at::Tensor variable = module->named_parameters()["w"];
  torch::optim::Optimizer& optimizer = MakeOptimizer(ctx, "test", spec, "Adagrad", kLr, {variable}, {});
  variable.mutable_grad() = at::full({1}, kGradient, at::kDouble);
  optimizer.step();
  return variable.item<double>();
}

}  // namespace

TEST_CASE("canned optimizers: one step of each name is Keras' update", "[canned][optimizers]") {
  const double g = kGradient;
  // Adagrad: the accumulator starts at 0.1 (Keras), not LibTorch's 0.
  CHECK(OneStep("Adagrad") == Approx(kVariable - kLr * g / (std::sqrt(0.1 + g * g) + 1e-7)).epsilon(1e-12));
  // Adam's first step moves by lr times about the sign of the gradient.
  CHECK(OneStep("Adam") == Approx(kVariable - kLr).epsilon(1e-6));
  // RMSProp (rho 0.9): ms = 0.1 g².
  CHECK(OneStep("RMSProp") == Approx(kVariable - kLr * g / (std::sqrt(0.1 * g * g) + 1e-7)).epsilon(1e-12));
  CHECK(OneStep("SGD") == Approx(kVariable - kLr * g).epsilon(1e-12));
  // FTRL from accumulator 0.1: n = 0.1 + g², z = g - (sqrt(n) - sqrt(0.1)) / lr * w, w = -z lr / sqrt(n).
  const double n = 0.1 + g * g;
  const double z = g - (std::sqrt(n) - std::sqrt(0.1)) / kLr * kVariable;
  CHECK(OneStep("Ftrl") == Approx(-z * kLr / std::sqrt(n)).epsilon(1e-12));
  // An explicit learning rate wins over the estimator's default.
  CHECK(OneStep({"SGD", 0.5}) == Approx(kVariable - 0.5 * g).epsilon(1e-12));
}

TEST_CASE("canned optimizers: unknown names and bad rates are named", "[canned][optimizers]") {
  CHECK_THROWS_WITH(OneStep("Momentum"), Catch::Contains("\"Momentum\" is not one of"));
  CHECK_THROWS_WITH(OneStep({"Adagrad", -1.0}), Catch::Contains("learning rate -1"));
}
