// Conv2dOneInputChannel agrees with LibTorch's conv2d, values and gradients, within float32
// rounding; its results do not depend on the thread count; other inputs get LibTorch's.

#include "kernels/conv2d_one_input_channel.h"

#include "estimator/autocast_scope.h"
#include "tests/kernels/op_results.h"
#include "tests/kernels/vector_bits.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <vector>

#include <catch2/catch.hpp>

namespace {

using est_test::OpResult;
using est_test::SameResult;

OpResult Ours(const torch::Tensor& input, const torch::Tensor& weight, const torch::Tensor& bias, bool input_grad) {
  return est_test::RunOp(input, weight, bias, est::kernels::Conv2dOneInputChannel, input_grad);
}

OpResult Reference(const torch::Tensor& input, const torch::Tensor& weight, const torch::Tensor& bias,
                   bool input_grad) {
  return est_test::RunOpInDouble(
      input, weight, bias, [](const auto& x, const auto& w, const auto& b) { return torch::conv2d(x, w, b); },
      input_grad);
}

bool Near(const torch::Tensor& ours, const torch::Tensor& reference) {
  if (!ours.defined() || !reference.defined()) return ours.defined() == reference.defined();
  // A float32 sum of n terms drifts by about sqrt(n) units of the terms' magnitude.
  const double scale = reference.abs().max().item<double>() + 1.0;
  return ours.sizes() == reference.sizes() && ours.scalar_type() == at::kFloat &&
         (ours - reference).abs().max().item<double>() <= 1e-5 * scale;
}

}  // namespace

TEST_CASE("Conv2dOneInputChannel equals conv2d within float32 rounding, values and gradients", "[kernels]") {
  const int vector_bits = EST_GENERATE_VECTOR_BITS(512, 0);  // its AVX-512 kernels, then LibTorch's convolution
  CAPTURE(vector_bits);
  EST_RUN_WITH_VECTOR_BITS_OR_SKIP(vector_bits);
  // Output widths below, at and above the 16 lanes of a vector, 3×3 and 5×5 filters, odd
  // and even filter counts (3×3 filters go in pairs), with and without bias.
  struct Case {
    std::vector<int64_t> input;
    int64_t filters, kernel;
  };
  const std::vector<Case> cases = {{{8, 1, 28, 28}, 32, 3}, {{2, 1, 5, 18}, 3, 3},  {{3, 1, 9, 35}, 5, 3},
                                   {{1, 1, 3, 3}, 1, 3},    {{2, 1, 20, 21}, 4, 5}, {{1, 1, 5, 40}, 3, 5}};
  torch::manual_seed(3);
  for (const Case& c : cases) {
    for (bool with_bias : {true, false}) {
      for (bool input_grad : {false, true}) {
        CAPTURE(c.input, c.filters, c.kernel, with_bias, input_grad);
        const auto input = torch::rand(c.input);
        const auto weight = torch::randn({c.filters, 1, c.kernel, c.kernel});
        const auto bias = with_bias ? torch::randn({c.filters}) : torch::Tensor();
        const OpResult ours = Ours(input, weight, bias, input_grad);
        const OpResult reference = Reference(input, weight, bias, input_grad);
        CHECK(Near(ours.output, reference.output));
        CHECK(Near(ours.grad_input, reference.grad_input));
        CHECK(Near(ours.grad_weight, reference.grad_weight));
        CHECK(Near(ours.grad_bias, reference.grad_bias));
      }
    }
  }
}

TEST_CASE("Conv2dOneInputChannel gives the same bits at any thread count", "[kernels][skippable]") {
  EST_RUN_WITH_VECTOR_BITS_OR_SKIP(512);
  torch::manual_seed(5);
  const auto input = torch::rand({16, 1, 28, 28});
  const auto weight = torch::randn({32, 1, 3, 3});
  const auto bias = torch::randn({32});
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const OpResult one = Ours(input, weight, bias, false);
  at::set_num_threads(4);
  const OpResult four = Ours(input, weight, bias, false);
  at::set_num_threads(threads);
  CHECK(SameResult(one, four));
}

TEST_CASE("Conv2dOneInputChannel runs LibTorch's convolution for other inputs and CPUs", "[kernels]") {
  torch::manual_seed(7);
  auto native = [](const auto& x, const auto& w, const auto& b) {
    return torch::thnn_conv2d(x, w, {w.size(2), w.size(3)}, b, {1, 1}, {0, 0});
  };
  auto same_as_native = [&](const torch::Tensor& input, const torch::Tensor& weight, const torch::Tensor& bias) {
    return SameResult(Ours(input, weight, bias, true), est_test::RunOp(input, weight, bias, native));
  };
  CHECK(same_as_native(torch::rand({2, 1, 9, 9}), torch::randn({3, 1, 4, 4}), torch::randn({3})));  // 4×4
  CHECK(same_as_native(torch::rand({2, 2, 9, 9}), torch::randn({3, 2, 3, 3}), torch::randn({3})));  // 2 channels
  CHECK(same_as_native(torch::rand({2, 1, 9, 9}, torch::kDouble), torch::randn({3, 1, 3, 3}, torch::kDouble),
                       torch::randn({3}, torch::kDouble)));
  CHECK(same_as_native(torch::rand({2, 1, 9, 9}).transpose(2, 3), torch::randn({3, 1, 3, 3}), torch::randn({3})));
  const est_test::VectorBitsCap without_avx512(256);
  CHECK(same_as_native(torch::rand({2, 1, 9, 9}), torch::randn({3, 1, 3, 3}), torch::randn({3})));
}

TEST_CASE("Conv2dOneInputChannel's gradient cannot be differentiated again", "[kernels][skippable]") {
  EST_RUN_WITH_VECTOR_BITS_OR_SKIP(512);  // LibTorch's convolution can be
  auto x = torch::rand({2, 1, 6, 6});
  auto w = torch::randn({2, 1, 3, 3}).requires_grad_();
  auto y = est::kernels::Conv2dOneInputChannel(x, w, torch::Tensor()).sum();
  CHECK_THROWS_WITH(torch::autograd::grad({y}, {w}, {}, /*retain_graph=*/true, /*create_graph=*/true),
                    Catch::Contains("cannot be differentiated again"));
}

TEST_CASE("Conv2dOneInputChannel under CPU autocast is LibTorch's conv2d in bfloat16", "[kernels]") {
  torch::manual_seed(11);
  const auto x = torch::rand({2, 1, 9, 9});
  const auto w = torch::randn({4, 1, 3, 3});
  const auto b = torch::randn({4});
  torch::Tensor ours, expected;
  {
    const est::AutocastScope autocast(est::MixedPrecision::kBFloat16, c10::Device("cpu"));
    ours = est::kernels::Conv2dOneInputChannel(x, w, b);
    expected = torch::conv2d(x, w, b);
  }
  CHECK(ours.scalar_type() == at::kBFloat16);
  CHECK(torch::equal(ours, expected));
}
