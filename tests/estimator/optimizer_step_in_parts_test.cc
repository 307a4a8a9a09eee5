// OptimizerStepInParts: a step taken in parts gives the whole step's results to the bit, and
// an optimizer that cannot step fused steps whole at the end.

#include "estimator/optimizer_step_in_parts.h"

#include <torch/torch.h>

#include <cstring>
#include <vector>

#include <catch2/catch.hpp>

#include "common/config.h"

namespace {

bool SameBits(const torch::Tensor& a, const torch::Tensor& b) {
  const auto x = a.contiguous(), y = b.contiguous();
  return a.sizes() == b.sizes() && std::memcmp(x.data_ptr(), y.data_ptr(), x.numel() * x.element_size()) == 0;
}

// Two identical sets of leaf parameters: a vector, a matrix, a large vector, a scalar.
std::vector<torch::Tensor> Parameters() {
  torch::manual_seed(3);
  std::vector<torch::Tensor> parameters;
  for (std::vector<int64_t> shape : {std::vector<int64_t>{17}, {33, 9}, {40000}, {1}})
    parameters.push_back(torch::randn(shape).requires_grad_(true));
  return parameters;
}
std::vector<torch::Tensor> Copies(const std::vector<torch::Tensor>& parameters) {
  std::vector<torch::Tensor> copies;
  for (const auto& p : parameters) copies.push_back(p.detach().clone().requires_grad_(true));
  return copies;
}

// The same gradients on both sets (step-dependent values).
void SetGradients(std::vector<torch::Tensor>& a, std::vector<torch::Tensor>& b, int step) {
  for (size_t k = 0; k < a.size(); ++k) {
    auto grad = torch::randn(a[k].sizes()).mul_(static_cast<double>(step + 1));
    a[k].mutable_grad() = grad.clone();
    b[k].mutable_grad() = grad;
  }
}

void RequireSame(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  for (size_t k = 0; k < a.size(); ++k) {
    INFO("parameter " << k);
    REQUIRE(SameBits(a[k], b[k]));
  }
}

}  // namespace

TEST_CASE("OptimizerStepInParts: Adam in parts equals its whole step bit for bit", "[optimizer]") {
  auto ours = Parameters(), theirs = Copies(ours);
  torch::optim::Adam in_parts(ours, torch::optim::AdamOptions(1e-2).weight_decay(0.01));
  torch::optim::Adam whole(theirs, torch::optim::AdamOptions(1e-2).weight_decay(0.01));
  const torch::Tensor outsider = torch::zeros({3}, torch::requires_grad());  // not the optimizer's
  for (int step = 0; step < 5; ++step) {
    INFO("step " << step);
    SetGradients(ours, theirs, step);
    whole.step();
    est::OptimizerStepInParts parts(in_parts, /*fuse=*/true);
    parts.part({ours[2], outsider});
    if (EST_WITH_KERNELS) {
      REQUIRE(SameBits(ours[2], theirs[2]));        // updated now
      REQUIRE_FALSE(SameBits(ours[1], theirs[1]));  // not yet
    } else {
      REQUIRE_FALSE(SameBits(ours[2], theirs[2]));  // without the kernels nothing steps before rest()
    }
    parts.part({ours[1], ours[2]});  // ours[2] is not updated twice
    parts.rest();
    RequireSame(ours, theirs);
  }
}

TEST_CASE("OptimizerStepInParts: without fusing, or an optimizer that cannot fuse, the rest is the whole step",
          "[optimizer]") {
  const bool adam = GENERATE(true, false);
  INFO((adam ? "Adam, fuse off" : "SGD with momentum"));
  auto ours = Parameters(), theirs = Copies(ours);
  const auto make = [&](const std::vector<torch::Tensor>& parameters) -> std::unique_ptr<torch::optim::Optimizer> {
    if (adam) return std::make_unique<torch::optim::Adam>(parameters, torch::optim::AdamOptions(1e-2));
    return std::make_unique<torch::optim::SGD>(parameters, torch::optim::SGDOptions(0.1).momentum(0.9));
  };
  auto in_parts = make(ours), whole = make(theirs);
  const auto before = Copies(ours);
  for (int step = 0; step < 3; ++step) {
    SetGradients(ours, theirs, step);
    whole->step();
    est::OptimizerStepInParts parts(*in_parts, /*fuse=*/!adam);
    parts.part({ours[0], ours[1]});
    if (step == 0) REQUIRE(SameBits(ours[0], before[0]));  // nothing was updated early
    parts.rest();
    RequireSame(ours, theirs);
  }
}

TEST_CASE("OptimizerStepInParts: a gradient whose layout changed after a part goes to LibTorch's step, once",
          "[optimizer]") {
  auto ours = Parameters(), theirs = Copies(ours);
  torch::optim::Adam in_parts(ours, torch::optim::AdamOptions(1e-2));
  torch::optim::Adam whole(theirs, torch::optim::AdamOptions(1e-2));
  for (int step = 0; step < 3; ++step) {
    SetGradients(ours, theirs, step);
    whole.step();
    est::OptimizerStepInParts parts(in_parts, /*fuse=*/true);
    parts.part({ours[0]});
    // The matrix's gradient, same values, now column-major: the fused step refuses it.
    ours[1].mutable_grad() = ours[1].grad().t().contiguous().t();
    parts.rest();
    RequireSame(ours, theirs);
    REQUIRE(ours[0].grad().defined());  // hidden from LibTorch's step, then given back
  }
}
