// ConvReluMaxPool2d: LibTorch's conv2d, relu and max_pool2d to the bit on random geometries,
// values with ties, zeros of both signs, infinities and NaNs, forward and every gradient, on
// each vector width; LibTorch's ops (and errors) where it does not take the arguments; twice
// differentiable; the same from several threads.

#include "kernels/conv_relu_max_pool.h"

#include "tests/kernels/pooling_cases.h"
#include "tests/kernels/vector_bits.h"
#include "tests/skip.h"

#include <torch/torch.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

// The file's own names, apart from those of the tests compiled with it in one unit.
namespace conv_relu_max_pool_test {
namespace {

using est::kernels::ConvReluMaxPool2d;
using est::kernels::ConvReluMaxPoolArgs;
using est_test::SameBits;

// One call's tensors and arguments.
struct Case {
  torch::Tensor input, weight, bias;
  bool exact = false;  // every sum exact in float32, whatever its order
  std::vector<int64_t> stride, padding, dilation;
  est_test::Pooling pool;
  ConvReluMaxPoolArgs args() const {
    return {stride, padding, dilation, pool.kernel, pool.stride, pool.padding, pool.dilation, pool.ceil_mode};
  }
};

std::ostream& operator<<(std::ostream& out, const Case& c) {
  out << "input " << c.input.sizes() << " weight " << c.weight.sizes() << " bias " << c.bias.defined() << " stride "
      << c.stride << " padding " << c.padding << " dilation " << c.dilation << " requires_grad "
      << c.input.requires_grad() << " pool " << c.pool;
  return out;
}

// A convolution of random geometry (1 to 20 input channels, 1 to 40 filters up to 4 × 4,
// strides 1 to 3, paddings 0 to 2, dilations 1 or 2) followed by a random pooling of its output;
// inputs with ties and special floats (est_test::Values) and weights of multiples of 0.5 in
// half the cases (every sum exact), normal noise in the others.
Case RandomCase(std::mt19937& random, uint64_t seed) {
  auto in = [&](int64_t low, int64_t high) { return std::uniform_int_distribution<int64_t>(low, high)(random); };
  Case c;
  const int64_t channels = in(0, 2) == 0 ? in(1, 20) : in(1, 3), filters = in(1, 40);
  const std::vector<int64_t> input_shape{in(1, 4), channels, in(4, 24), in(4, 24)};
  const std::vector<int64_t> weight_shape{filters, channels, in(1, 4), in(1, 4)};
  const bool special = in(0, 1) == 1;
  c.exact = special;
  c.input = special ? est_test::Values(input_shape, seed) : torch::randn(input_shape);
  // Finite weights: an infinite one times the zeros of the padding is NaN in some of LibTorch's
  // convolutions (im2col) and not in others (oneDNN skips the padding).
  c.weight = special ? torch::randint(-3, 4, weight_shape).to(torch::kFloat32).mul_(0.5)
                     : torch::randn(weight_shape) * 0.3;
  if (in(0, 3) != 0) c.bias = special ? est_test::Values({filters}, seed + 2) : torch::randn({filters}) * 0.2;
  c.stride = {in(1, 3), in(1, 3)};
  c.padding = {in(0, 2), in(0, 2)};
  c.dilation = {in(1, 2), in(1, 2)};
  c.pool = est_test::RandomPooling(random);
  c.pool.shape.clear();
  c.weight.requires_grad_();
  if (c.bias.defined()) c.bias.requires_grad_();
  if (in(0, 2) == 0) c.input.requires_grad_();
  return c;
}

// The pooled output and the gradients of input, weight and bias (undefined where not asked
// for) of `fused` or of LibTorch's three ops, for an output gradient of seed 5: normal noise,
// or for an exact case multiples of 0.5 from -1.5 to 1.5 (so that every sum stays exact).
std::vector<torch::Tensor> Results(const Case& c, bool fused) {
  std::vector<torch::Tensor> leaves{c.input, c.weight, c.bias};
  for (auto& leaf : leaves)
    if (leaf.defined() && leaf.requires_grad()) leaf.mutable_grad() = torch::Tensor();
  const ConvReluMaxPoolArgs a = c.args();
  const torch::Tensor out =
      fused ? ConvReluMaxPool2d(c.input, c.weight, c.bias, a)
            : torch::max_pool2d(torch::relu(torch::conv2d(c.input, c.weight, c.bias, a.stride, a.padding, a.dilation)),
                                a.kernel_size, a.pool_stride, a.pool_padding, a.pool_dilation, a.ceil_mode);
  torch::manual_seed(5);
  out.backward(c.exact ? torch::randint(-3, 4, out.sizes()).to(torch::kFloat32).mul_(0.5) : torch::randn_like(out));
  std::vector<torch::Tensor> results{out.detach()};
  for (const auto& leaf : leaves) results.push_back(leaf.defined() && leaf.requires_grad() ? leaf.grad() : torch::Tensor());
  return results;
}

// Equal values with NaNs in the same places, the NaNs' payloads and the zeros' signs aside: what
// sums in another order give where every sum is exact (oneDNN sums a convolution in an order of
// its own choosing).
bool SameValues(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.sizes() != b.sizes() || !torch::equal(torch::isnan(a), torch::isnan(b))) return false;
  const auto zero = torch::zeros_like(a);
  return torch::equal(torch::where(torch::isnan(a), zero, a), torch::where(torch::isnan(b), zero, b));
}

// Within float32 rounding of sums of up to a few thousand terms: 2e-5 of the largest value.
bool WithinRounding(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.sizes() != b.sizes() || !torch::equal(torch::isnan(a), torch::isnan(b))) return false;
  const double scale = std::max(1.0, b.abs().nan_to_num(0, 0, 0).max().item<double>());
  return torch::allclose(a, b, /*rtol=*/0, /*atol=*/2e-5 * scale, /*equal_nan=*/true);
}

// Where ConvReluMaxPool2d computes nothing itself in this build or on this CPU, says so.
#define EST_REQUIRE_FUSED_CONV_OR_SKIP()                                                                         \
  if (!est::kernels::ConvReluMaxPool2dTakes(torch::ones({1, 1, 4, 4}), torch::ones({2, 1, 3, 3}), {},            \
                                            {{1}, {0}, {1}, {2}, {}, {0}, {1}, false}))                          \
  EST_SKIP("needs oneDNN (the shared library LibTorch links: EST_ONEDNN_MATMUL) writing a convolution's output " \
           "in a blocked layout of 8 or 16 channels on this CPU (AVX2 or AVX-512)")

// Runs 150 random cases on the kernels of `bits`-wide vectors: the values and gradients of
// LibTorch's three ops (where every sum is exact, the same values; otherwise within float32
// rounding), or LibTorch's error where they raise one.
void ExpectLibTorchsResults(int bits, int expected_block) {
  const est_test::VectorBitsCap cap(bits);
  std::mt19937 random(71 + bits);
  int taken = 0;
  for (int i = 0; i < 150; ++i) {
    const Case c = RandomCase(random, 1000 + i);
    CAPTURE(bits, i, c);
    std::optional<std::vector<torch::Tensor>> expected;
    std::string error;
    try {
      expected = Results(c, false);
    } catch (const c10::Error& e) {
      error = e.what_without_backtrace();
    }
    if (!expected) {
      CHECK_THROWS_WITH(Results(c, true), Catch::Contains(error.substr(0, error.find('\n'))));
      continue;
    }
    const int block = est::kernels::detail::ConvReluMaxPool2dBlock(c.input, c.weight, c.bias, c.args());
    if (block != 0) {
      ++taken;
      if (expected_block != 0) CHECK(block == expected_block);
    }
    const auto fused = Results(c, true);
    for (size_t r = 0; r < fused.size(); ++r) {
      CAPTURE(r);
      REQUIRE(fused[r].defined() == (*expected)[r].defined());
      if (!fused[r].defined()) continue;
      const bool same = c.exact ? SameValues(fused[r], (*expected)[r]) : WithinRounding(fused[r], (*expected)[r]);
      CHECK(same);
    }
  }
  CHECK(taken >= 50);  // most of the random cases run on the fused path
}

// The tutorial CNN's layer, as its training step calls it: LibTorch's bits, where oneDNN makes
// the same choices for both calls.
void ExpectLibTorchsBitsOnTheCnnLayer(int bits) {
  const est_test::VectorBitsCap cap(bits);
  torch::manual_seed(8);
  Case c;
  c.input = torch::rand({64, 1, 28, 28});
  c.weight = (torch::randn({32, 1, 3, 3}) * 0.3).requires_grad_();
  c.bias = (torch::randn({32}) * 0.1).requires_grad_();
  c.stride = {1};
  c.padding = {0};
  c.dilation = {1};
  c.pool.kernel = {2};
  c.pool.padding = {0};
  c.pool.dilation = {1};
  const auto fused = Results(c, true), expected = Results(c, false);
  for (size_t r = 0; r < fused.size(); ++r) {
    CAPTURE(bits, r);
    CHECK(fused[r].defined() == expected[r].defined());
    if (fused[r].defined()) CHECK(SameBits(fused[r], expected[r]));
  }
}

TEST_CASE("ConvReluMaxPool2d gives LibTorch's values and gradients on random geometries, each width",
          "[kernels][skippable]") {
  EST_REQUIRE_FUSED_CONV_OR_SKIP();
  for (int bits : {512, 256, 0})
    if (est::kernels::detail::CpuVectorBits() >= bits) {
      ExpectLibTorchsResults(bits, 0);
      ExpectLibTorchsBitsOnTheCnnLayer(bits);
    }
}

// In a process of its own ([skippable]), before oneDNN makes any kernel: oneDNN capped at AVX2
// lays out 8 channels a block, as on CPUs without AVX-512.
TEST_CASE("ConvReluMaxPool2d on oneDNN's AVX2 layout (8-channel blocks) gives LibTorch's results",
          "[kernels][skippable]") {
  const bool limited = est::kernels::detail::LimitOneDnnToAvx2() &&
                       est::kernels::detail::ConvReluMaxPool2dBlock(torch::ones({1, 1, 5, 5}), torch::ones({3, 1, 2, 2}),
                                                                    {}, {{1}, {0}, {1}, {2}, {}, {0}, {1}, false}) == 8;
  if (!limited)
    EST_SKIP("needs oneDNN (EST_ONEDNN_MATMUL) capped at AVX2 and then writing 8-channel blocks: oneDNN keeps a "
             "wider ISA once it has made kernels in a process (this case runs in one of its own under CTest)");
  for (int bits : {256, 0})
    if (est::kernels::detail::CpuVectorBits() >= bits) {
      ExpectLibTorchsResults(bits, 8);
      ExpectLibTorchsBitsOnTheCnnLayer(bits);
    }
}

TEST_CASE("ConvReluMaxPool2d leaves what it does not take to LibTorch's ops, with their errors", "[kernels]") {
  const ConvReluMaxPoolArgs args{{1}, {0}, {1}, {2}, {}, {0}, {1}, false};
  torch::manual_seed(3);
  const auto input = torch::randn({2, 3, 10, 10});
  const auto weight = torch::randn({4, 3, 3, 3});
  const auto bias = torch::randn({4});
  auto three_ops = [&](const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
    return torch::max_pool2d(torch::relu(torch::conv2d(x, w, b)), 2);
  };
  // Another dtype, a channels-last input, a strided (non-contiguous) weight: LibTorch's results.
  for (const auto& [x, w] : std::vector<std::pair<torch::Tensor, torch::Tensor>>{
           {input.to(torch::kDouble), weight.to(torch::kDouble)},
           {input.contiguous(torch::MemoryFormat::ChannelsLast), weight},
           {input, weight.transpose(2, 3)}}) {
    CAPTURE(x.scalar_type(), x.strides(), w.strides());
    CHECK_FALSE(est::kernels::ConvReluMaxPool2dTakes(x, w, bias.to(x.scalar_type()), args));
    CHECK(SameBits(ConvReluMaxPool2d(x, w, bias.to(x.scalar_type()), args), three_ops(x, w, bias.to(x.scalar_type()))));
  }
  // Channels that do not match, a window larger than the input: LibTorch's own errors.
  CHECK_THROWS_WITH(ConvReluMaxPool2d(input, torch::randn({4, 2, 3, 3}), bias, args),
                    Catch::Contains("expected input[2, 3, 10, 10] to have 2 channels"));
  CHECK_THROWS_WITH(ConvReluMaxPool2d(input, weight, bias, {{1}, {0}, {1}, {9}, {}, {0}, {1}, false}),
                    Catch::Contains("Output size is too small"));
}

TEST_CASE("ConvReluMaxPool2d's gradient differentiates again (create_graph) as LibTorch's ops' does",
          "[kernels][skippable]") {
  EST_REQUIRE_FUSED_CONV_OR_SKIP();
  torch::manual_seed(4);
  const auto input = torch::randn({2, 2, 9, 9}, torch::requires_grad());
  const auto weight = torch::randn({5, 2, 3, 3}, torch::requires_grad());
  const auto bias = torch::randn({5}, torch::requires_grad());
  const ConvReluMaxPoolArgs args{{1}, {1}, {1}, {2}, {}, {0}, {1}, false};
  auto second = [&](bool fused) {
    const auto out = fused ? ConvReluMaxPool2d(input, weight, bias, args)
                           : torch::max_pool2d(torch::relu(torch::conv2d(input, weight, bias, 1, 1)), 2);
    const auto first = torch::autograd::grad({out.pow(2).sum()}, {weight}, {}, true, true)[0];
    return torch::autograd::grad({first.sum()}, {input})[0];
  };
  const auto fused = second(true), expected = second(false);
  CHECK(torch::allclose(fused, expected, 1e-5, 1e-5));
}

TEST_CASE("ConvReluMaxPool2d gives the same bits from several threads at once", "[kernels][skippable]") {
  EST_REQUIRE_FUSED_CONV_OR_SKIP();
  torch::manual_seed(6);
  const auto input = torch::randn({8, 3, 20, 20});
  const auto weight = torch::randn({24, 3, 3, 3}, torch::requires_grad());
  const ConvReluMaxPoolArgs args{{1}, {1}, {1}, {3}, {2}, {1}, {1}, true};
  auto run = [&] {
    const auto out = ConvReluMaxPool2d(input, weight, {}, args);
    return std::make_pair(out.detach(), torch::autograd::grad({out.sum()}, {weight})[0]);
  };
  const auto expected = run();
  std::vector<std::pair<torch::Tensor, torch::Tensor>> results(4);
  std::vector<std::thread> threads;
  for (auto& result : results) threads.emplace_back([&] { result = run(); });
  for (auto& thread : threads) thread.join();
  for (const auto& [out, grad] : results) {
    CHECK(SameBits(out, expected.first));
    CHECK(SameBits(grad, expected.second));
  }
}

}  // namespace
}  // namespace conv_relu_max_pool_test
