// est::kernels::Linear agrees with LibTorch's linear, values and gradients, within float32
// rounding; its results do not depend on the thread count; other inputs get LibTorch's.

#include "kernels/linear.h"

#include "estimator/autocast_scope.h"
#include "tests/kernels/op_results.h"
#include "tests/kernels/vector_bits.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace {

using est_test::OpResult;
using est_test::SameResult;

OpResult Ours(const torch::Tensor& input, const torch::Tensor& weight, const torch::Tensor& bias) {
  return est_test::RunOp(input, weight, bias, est::kernels::Linear);
}

// LibTorch's own linear, the op ours stands in for.
torch::Tensor LibTorchLinear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
  return torch::linear(x, w, b);
}

OpResult Reference(const torch::Tensor& input, const torch::Tensor& weight, const torch::Tensor& bias) {
  return est_test::RunOpInDouble(input, weight, bias, LibTorchLinear);
}

// Within float32 rounding of sums of `terms` products of the operands' magnitude.
bool Near(const torch::Tensor& ours, const torch::Tensor& reference, int64_t terms) {
  if (!ours.defined() || !reference.defined()) return ours.defined() == reference.defined();
  const double bound = 4e-7 * std::sqrt(static_cast<double>(terms)) * (reference.abs().max().item<double>() + 1.0);
  return ours.sizes() == reference.sizes() && ours.scalar_type() == at::kFloat &&
         (ours - reference).abs().max().item<double>() <= bound * 8;
}

}  // namespace

TEST_CASE("est::kernels::Linear equals linear within float32 rounding, values and gradients", "[kernels]") {
  const int vector_bits = EST_GENERATE_VECTOR_BITS(512, 0);  // its AVX-512 kernels, then LibTorch's products
  CAPTURE(vector_bits);
  EST_RUN_WITH_VECTOR_BITS_OR_SKIP(vector_bits);
  // [M, K] inputs, N outputs: sizes below, at and past the kernels' blocks (8 and 4 rows, 32
  // columns, 16 lanes, chunks of 1024 along K), the CNN's dense layers among them.
  struct Case {
    int64_t m, k, n;
  };
  const std::vector<Case> cases = {{64, 5408, 64}, {64, 64, 10}, {1, 1, 1},     {3, 17, 5},
                                   {9, 33, 31},    {13, 2050, 7}, {8, 1024, 4}, {17, 40, 70}};
  torch::manual_seed(3);
  for (const Case& c : cases) {
    for (bool with_bias : {true, false}) {
      CAPTURE(c.m, c.k, c.n, with_bias);
      const auto input = torch::randn({c.m, c.k});
      const auto weight = torch::randn({c.n, c.k});
      const auto bias = with_bias ? torch::randn({c.n}) : torch::Tensor();
      const OpResult ours = Ours(input, weight, bias);
      const OpResult reference = Reference(input, weight, bias);
      CHECK(Near(ours.output, reference.output, c.k));
      CHECK(Near(ours.grad_input, reference.grad_input, c.n));
      CHECK(Near(ours.grad_weight, reference.grad_weight, c.m));
      CHECK(Near(ours.grad_bias, reference.grad_bias, c.m));
    }
  }
}

TEST_CASE("est::kernels::Linear gives the same bits at any thread count", "[kernels][skippable]") {
  EST_RUN_WITH_VECTOR_BITS_OR_SKIP(512);  // OpenBLAS's bits depend on the thread count
  torch::manual_seed(5);
  const auto input = torch::randn({64, 5408});
  const auto weight = torch::randn({64, 5408});
  const auto bias = torch::randn({64});
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const OpResult one = Ours(input, weight, bias);
  at::set_num_threads(4);
  const OpResult four = Ours(input, weight, bias);
  at::set_num_threads(threads);
  CHECK(SameResult(one, four));
}

TEST_CASE("est::kernels::Linear runs LibTorch's products, to linear's bits, for weights over 2^21 values", "[kernels]") {
  torch::manual_seed(13);
  const auto input = torch::randn({5, 2048});
  const auto weight = torch::randn({1025, 2048});  // 2 099 200 values
  for (bool with_bias : {true, false}) {
    CAPTURE(with_bias);
    const auto bias = with_bias ? torch::randn({1025}) : torch::Tensor();
    CHECK(SameResult(Ours(input, weight, bias), est_test::RunOp(input, weight, bias, LibTorchLinear)));
    CHECK(SameResult(est_test::RunOp(input, weight, bias, est::kernels::Linear, /*input_grad=*/false),
                     est_test::RunOp(input, weight, bias, LibTorchLinear, /*input_grad=*/false)));
  }
}

TEST_CASE("est::kernels::Linear's weight gradient reaches its hooks before the input's gradient exists", "[kernels]") {
  // A gradient all-reduce hooked on the weight can start while the input's product runs.
  const int vector_bits = EST_GENERATE_VECTOR_BITS(512, 0);  // its AVX-512 kernels, then LibTorch's products
  CAPTURE(vector_bits);
  EST_RUN_WITH_VECTOR_BITS_OR_SKIP(vector_bits);
  torch::manual_seed(17);
  for (int64_t inputs : {64, 2048}) {  // within and over 2^21 weight values
    CAPTURE(inputs);
    auto x = torch::randn({4, inputs}).requires_grad_();
    auto w = torch::randn({1025, inputs}).requires_grad_();
    auto b = torch::randn({1025}).requires_grad_();
    std::vector<std::string> events;
    w.register_hook([&](const torch::Tensor&) { events.push_back(x.grad().defined() ? "w after x" : "w"); });
    b.register_hook([&](const torch::Tensor&) { events.push_back(x.grad().defined() ? "b after x" : "b"); });
    x.register_hook([&](const torch::Tensor&) { events.push_back("x"); });
    est::kernels::Linear(x, w, b).sum().backward();
    std::sort(events.begin(), events.end() - 1);
    CHECK(events == std::vector<std::string>{"b", "w", "x"});
  }
}

TEST_CASE("est::kernels::Linear's output can be changed in place, and runs without autograd", "[kernels]") {
  const int vector_bits = EST_GENERATE_VECTOR_BITS(512, 0);  // its AVX-512 kernels, then LibTorch's products
  CAPTURE(vector_bits);
  EST_RUN_WITH_VECTOR_BITS_OR_SKIP(vector_bits);
  torch::manual_seed(19);
  const auto input = torch::randn({6, 40});
  const auto weight = torch::randn({12, 40});
  const auto bias = torch::randn({12});
  auto relu_in_place = [](auto linear) {
    return [linear](const auto& x, const auto& w, const auto& b) { return linear(x, w, b).relu_(); };
  };
  const OpResult ours = est_test::RunOp(input, weight, bias, relu_in_place(est::kernels::Linear));
  const OpResult reference =
      est_test::RunOpInDouble(input, weight, bias, relu_in_place(LibTorchLinear));
  CHECK(Near(ours.output, reference.output, 40));
  CHECK(Near(ours.grad_input, reference.grad_input, 12));
  CHECK(Near(ours.grad_weight, reference.grad_weight, 6));
  CHECK(Near(ours.grad_bias, reference.grad_bias, 6));
  torch::NoGradGuard no_grad;
  const auto output = est::kernels::Linear(input, weight.clone().requires_grad_(), bias);
  CHECK_FALSE(output.requires_grad());
  CHECK(torch::equal(output.relu(), ours.output));
}

TEST_CASE("est::kernels::Linear runs LibTorch's linear for other inputs and CPUs", "[kernels]") {
  torch::manual_seed(7);
  auto same_as_libtorch = [&](const torch::Tensor& input, const torch::Tensor& weight, const torch::Tensor& bias) {
    return SameResult(Ours(input, weight, bias), est_test::RunOp(input, weight, bias, LibTorchLinear));
  };
  CHECK(same_as_libtorch(torch::randn({2, 3, 8}), torch::randn({5, 8}), torch::randn({5})));  // 3-D input
  CHECK(same_as_libtorch(torch::randn({4, 8}, torch::kDouble), torch::randn({5, 8}, torch::kDouble),
                         torch::randn({5}, torch::kDouble)));
  CHECK(same_as_libtorch(torch::randn({8, 4}).t(), torch::randn({5, 8}), torch::randn({5})));  // not contiguous
  const est_test::VectorBitsCap without_avx512(256);
  CHECK(same_as_libtorch(torch::randn({4, 8}), torch::randn({5, 8}), torch::randn({5})));
}

TEST_CASE("est::kernels::Linear's gradient cannot be differentiated again", "[kernels]") {
  auto x = torch::randn({2, 6});
  auto w = torch::randn({3, 6}).requires_grad_();
  auto y = est::kernels::Linear(x, w, torch::Tensor()).sum();
  CHECK_THROWS_WITH(torch::autograd::grad({y}, {w}, {}, /*retain_graph=*/true, /*create_graph=*/true),
                    Catch::Contains("cannot be differentiated again"));
}

TEST_CASE("est::kernels::Linear under CPU autocast is LibTorch's linear in bfloat16", "[kernels]") {
  torch::manual_seed(11);
  const auto x = torch::randn({4, 8});
  const auto w = torch::randn({5, 8});
  const auto b = torch::randn({5});
  torch::Tensor ours, expected;
  {
    const est::AutocastScope autocast(est::MixedPrecision::kBFloat16, c10::Device("cpu"));
    ours = est::kernels::Linear(x, w, b);
    expected = torch::linear(x, w, b);
  }
  CHECK(ours.scalar_type() == at::kBFloat16);
  CHECK(torch::equal(ours, expected));
}
