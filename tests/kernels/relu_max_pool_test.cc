// ReluMaxPool2x2 gives LibTorch's relu + max_pool2d values and gradients to the bit.

#include "kernels/relu_max_pool.h"

#include "tests/kernels/vector_bits.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

// The file's own names, apart from those of the tests compiled with it in one unit.
namespace relu_max_pool_test {
namespace {

// Values with many ties, zeros of both signs, negatives only windows and some NaNs.
torch::Tensor Activations(const std::vector<int64_t>& shape, uint64_t seed) {
  torch::manual_seed(seed);
  auto values = torch::randint(-3, 4, shape).to(torch::kFloat32).mul_(0.5);
  auto flat = values.view(-1);
  const int64_t n = flat.numel();
  flat.index_put_({torch::randint(n, {std::max<int64_t>(1, n / 50)}, torch::kLong)},
                  std::numeric_limits<float>::quiet_NaN());
  flat.index_put_({torch::randint(n, {std::max<int64_t>(1, n / 20)}, torch::kLong)}, -0.0f);
  flat.index_put_({torch::randint(n, {std::max<int64_t>(1, n / 20)}, torch::kLong)}, torch::randn({1}).item<float>());
  return values;
}

// Equal values, with NaN equal to NaN.
bool SameValues(const torch::Tensor& a, const torch::Tensor& b) {
  return a.sizes() == b.sizes() && torch::equal(a.isnan(), b.isnan()) &&
         torch::equal(a.nan_to_num(0.0), b.nan_to_num(0.0));
}

struct Result {
  torch::Tensor output, grad;
};

template <class Op>
Result Run(const torch::Tensor& input, const torch::Tensor& grad_output_seed, Op op) {
  auto x = input.clone().requires_grad_();
  auto y = op(x);
  y.backward(grad_output_seed.defined() ? grad_output_seed : torch::ones_like(y));
  return {y.detach(), x.grad()};
}

torch::Tensor Reference(const torch::Tensor& x) { return torch::max_pool2d(torch::relu(x), 2); }

}  // namespace

TEST_CASE("ReluMaxPool2x2 equals relu then max_pool2d, values and gradients", "[kernels]") {
  const int vector_bits = EST_GENERATE_VECTOR_BITS(512, 256, 0);
  CAPTURE(vector_bits);
  EST_RUN_WITH_VECTOR_BITS_OR_SKIP(vector_bits);
  // Widths below, at and above the 8 and 16 windows of a vector step, odd and even sizes.
  const std::vector<std::vector<int64_t>> shapes = {{3, 5, 26, 26}, {2, 4, 13, 13}, {1, 1, 2, 2},  {2, 3, 7, 33},
                                                    {1, 2, 16, 16}, {4, 1, 28, 28}, {1, 3, 5, 17}, {2, 2, 3, 2},
                                                    {1, 2, 4, 32},  {2, 1, 5, 35},  {1, 1, 6, 66}, {1, 2, 3, 63}};
  uint64_t seed = 1;
  for (const auto& shape : shapes) {
    CAPTURE(shape);
    const auto input = Activations(shape, seed++);
    const auto pooled = Reference(input);
    const auto upstream = torch::randn(pooled.sizes());
    const auto expected = Run(input, upstream, Reference);
    const auto actual = Run(input, upstream, est::kernels::ReluMaxPool2x2);
    CHECK(SameValues(actual.output, expected.output));
    CHECK(SameValues(actual.grad, expected.grad));
  }
}

TEST_CASE("ReluMaxPool2x2 routes each window's gradient to its first maximum and none to non-positive ones",
          "[kernels]") {
  const int vector_bits = EST_GENERATE_VECTOR_BITS(512, 256, 0);
  CAPTURE(vector_bits);
  EST_RUN_WITH_VECTOR_BITS_OR_SKIP(vector_bits);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // One row of windows, each [top-left, top-right; bottom-left, bottom-right].
  const std::vector<std::vector<float>> windows = {
      {1, 2, 3, 4}, {4, 3, 2, 1}, {2, 2, 2, 2}, {-1, -2, -3, -4}, {0, 0, 0, 0}, {-1, 0, 1, nan}, {nan, 5, 1, 1},
      {-0.0f, -1, -2, -3}, {1, nan, nan, 1}};
  const int64_t count = static_cast<int64_t>(windows.size());
  auto input = torch::empty({1, 1, 2, 2 * count});
  for (int64_t j = 0; j < count; ++j) {
    input[0][0][0][2 * j] = windows[j][0];
    input[0][0][0][2 * j + 1] = windows[j][1];
    input[0][0][1][2 * j] = windows[j][2];
    input[0][0][1][2 * j + 1] = windows[j][3];
  }
  const auto upstream = torch::arange(1, count + 1, torch::kFloat32).view({1, 1, 1, count});
  const auto actual = Run(input, upstream, est::kernels::ReluMaxPool2x2);
  const auto out = actual.output.view(-1);
  CHECK(out[0].item<float>() == 4.f);
  CHECK(out[2].item<float>() == 2.f);
  CHECK(out[3].item<float>() == 0.f);
  CHECK(std::isnan(out[5].item<float>()));
  CHECK(std::isnan(out[8].item<float>()));
  const auto grad = actual.grad[0][0];
  auto at = [&](int64_t window, int64_t row, int64_t column) {
    return grad[row][2 * window + column].item<float>();
  };
  CHECK(at(0, 1, 1) == 1.f);                      // the bottom-right maximum
  CHECK(at(1, 0, 0) == 2.f);                      // the top-left maximum
  CHECK(at(2, 0, 0) == 3.f);                      // ties: the first
  CHECK(at(2, 0, 1) == 0.f);
  CHECK(grad.slice(1, 6, 10).abs().sum().item<float>() == 0.f);  // windows 3 and 4: nothing positive
  CHECK(at(5, 1, 1) == 6.f);                      // a NaN wins, and relu passes its gradient
  CHECK(at(6, 0, 0) == 7.f);
  CHECK(at(8, 1, 0) == 9.f);                      // the last NaN, as LibTorch's max-pool picks
  CHECK(grad.isnan().sum().item<int64_t>() == 0);
}

TEST_CASE("ReluMaxPool2x2 splits planes across intra-op threads with the same result", "[kernels]") {
  const auto input = Activations({8, 16, 26, 26}, 77);
  const int previous = torch::get_num_threads();
  torch::set_num_threads(1);
  const auto one = Run(input, {}, est::kernels::ReluMaxPool2x2);
  torch::set_num_threads(2);
  const auto two = Run(input, {}, est::kernels::ReluMaxPool2x2);
  torch::set_num_threads(previous);
  CHECK(SameValues(one.output, two.output));
  CHECK(SameValues(one.grad, two.grad));
}

TEST_CASE("ReluMaxPool2x2 runs LibTorch's ops on inputs outside its fast path", "[kernels]") {
  SECTION("float64") {
    const auto input = Activations({2, 3, 6, 6}, 5).to(torch::kFloat64);
    CHECK(SameValues(Run(input, {}, est::kernels::ReluMaxPool2x2).grad, Run(input, {}, Reference).grad));
  }
  SECTION("channels-last") {
    const auto input = Activations({2, 3, 6, 6}, 6).contiguous(torch::MemoryFormat::ChannelsLast);
    CHECK(SameValues(Run(input, {}, est::kernels::ReluMaxPool2x2).output, Run(input, {}, Reference).output));
  }
  SECTION("a 3-D input") {
    const auto input = Activations({3, 6, 6}, 7);
    CHECK(SameValues(est::kernels::ReluMaxPool2x2(input), Reference(input)));
  }
  SECTION("a twice-differentiated fallback still works") {
    auto x = Activations({1, 1, 4, 4}, 8).to(torch::kFloat64).requires_grad_();
    auto g = torch::autograd::grad({est::kernels::ReluMaxPool2x2(x).sum()}, {x}, {}, true, true)[0];
    CHECK(g.requires_grad());
  }
}

TEST_CASE("ReluMaxPool2x2's gradient refuses to be differentiated again", "[kernels]") {
  auto x = Activations({1, 1, 4, 4}, 9).requires_grad_();
  auto y = est::kernels::ReluMaxPool2x2(x).sum();
  CHECK_THROWS_WITH(torch::autograd::grad({y}, {x}, {}, true, true),
                    Catch::Contains("ReluMaxPool2x2's gradient cannot be differentiated again"));
}

}  // namespace relu_max_pool_test
