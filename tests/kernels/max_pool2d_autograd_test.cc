// MaxPool2dAutograd gives LibTorch's values and gradients to the bit, with relu's backward
// folded in, hooks kept, second derivatives and in-place checks as LibTorch's.

#include "kernels/cpu_op_replacements.h"
#include "kernels/max_pool2d_autograd.h"
#include "kernels/max_pool2d_internal.h"

#include "tests/kernels/pooling_cases.h"
#include "tests/kernels/vector_bits.h"

#include <ATen/ops/max_pool2d_with_indices_cpu_dispatch.h>
#include <c10/util/Exception.h>
#include <torch/torch.h>

#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

// The file's own names, apart from those of the tests compiled with it in one unit.
namespace max_pool2d_autograd_test {
namespace {

using est_test::Pooling;
using est_test::SameBits;
using est_test::Values;

// What comes before the pooling: relu (whose backward ours folds in), another op, or nothing
// (the pooling of a leaf).
enum class Before { kRelu, kScale, kLeaf };

// The output, the gradient of the input before `before` and the pooling's grad_fn.
struct Run {
  torch::Tensor output, grad;
  std::string node;
};

torch::Tensor Ours(const torch::Tensor& x, const Pooling& p) {
  return est::kernels::MaxPool2dAutograd(x, p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode);
}

// LibTorch's own: max_pool2d_with_indices and its autograd node (whose CPU kernel, where
// ReplaceSlowCpuOps has run, gives LibTorch's bits: max_pool2d_test.cc).
torch::Tensor Libtorchs(const torch::Tensor& x, const Pooling& p) {
  return std::get<0>(torch::max_pool2d_with_indices(x, p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode));
}

template <class Pool>
Run Backward(const torch::Tensor& values, Before before, const Pooling& p, Pool pool, uint64_t seed) {
  auto y = values.clone().requires_grad_();
  const auto x = before == Before::kRelu ? torch::relu(y) : before == Before::kScale ? y * 1.5 : y;
  auto out = pool(x, p);
  torch::manual_seed(seed);
  out.backward(torch::randn(out.sizes()));
  return {out.detach(), y.grad(), out.grad_fn()->name()};
}

}  // namespace

TEST_CASE("MaxPool2dAutograd gives LibTorch's values and gradients for random poolings, after relu or not",
          "[kernels]") {
  const int vector_bits = EST_GENERATE_VECTOR_BITS(512, 256);
  CAPTURE(vector_bits);
  EST_RUN_WITH_VECTOR_BITS_OR_SKIP(vector_bits);
  std::mt19937 random(72);
  int ours = 0, relu_folded = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const Pooling p = est_test::RandomPooling(random);
    const Before before = static_cast<Before>(trial % 3);
    CAPTURE(trial, p, static_cast<int>(before));
    const auto values = Values(p.shape, static_cast<uint64_t>(trial));
    torch::Tensor indices;
    try {
      indices = std::get<1>(at::cpu::max_pool2d_with_indices(values, p.kernel, p.stride, p.padding, p.dilation,
                                                             p.ceil_mode));
    } catch (const c10::Error&) {  // LibTorch refuses it: so does ours
      CHECK_THROWS_AS(Backward(values, before, p, Ours, trial), c10::Error);
      continue;
    }
    // A window that reads no input gets an index outside the plane from LibTorch, whose backward
    // then writes out of bounds: not a case to run either side's backward on.
    const int64_t plane = values.size(-2) * values.size(-1);
    if (indices.numel() > 0 && (indices.min().item<int64_t>() < 0 || indices.max().item<int64_t>() >= plane)) continue;
    const Run expected = Backward(values, before, p, Libtorchs, trial);
    const Run got = Backward(values, before, p, Ours, trial);
    CHECK(SameBits(got.output, expected.output));
    CHECK(SameBits(got.grad, expected.grad));
    const bool is_ours = est::kernels::detail::MaxPool2dIsOurs(values, p.kernel, p.stride, p.padding, p.dilation,
                                                                p.ceil_mode);
    CHECK(got.node == (is_ours ? "est::kernels::MaxPool2dBackward" : expected.node));
    ours += is_ours;
    relu_folded += is_ours && before == Before::kRelu;
  }
  CHECK(ours > 150);
  CHECK(relu_folded > 50);
}

TEST_CASE("MaxPool2dAutograd hands relu's gradient straight to relu's input, one node fewer", "[kernels]") {
  const Pooling p{{2, 3, 8, 8}, {2}, {}, {0}, {1}, false};
  auto y = Values(p.shape, 5).requires_grad_();
  const auto out = Ours(torch::relu(y), p);
  const auto& next = out.grad_fn()->next_edges();
  REQUIRE(next.size() == 1);
  CHECK(next[0].function->name() == "torch::autograd::AccumulateGrad");  // y's, past relu's node
  const auto scaled = Ours(y * 2, p);
  CHECK(scaled.grad_fn()->next_edges()[0].function->name() == "MulBackward1");
}

TEST_CASE("MaxPool2dAutograd runs the hooks of relu's output and keeps its retained gradient", "[kernels]") {
  const Pooling p{{2, 4, 10, 10}, {3}, {2}, {1}, {1}, true};
  const auto values = Values(p.shape, 6);
  auto run = [&](auto pool) {
    auto y = values.clone().requires_grad_();
    auto x = torch::relu(y);
    x.retain_grad();
    x.register_hook([](const torch::Tensor& g) { return g * 3 - 1; });
    const auto out = pool(x, p);
    torch::manual_seed(6);
    out.backward(torch::randn(out.sizes()));
    return std::make_pair(y.grad(), x.grad());
  };
  const auto expected = run(Libtorchs);
  const auto got = run(Ours);
  CHECK(SameBits(got.first, expected.first));
  CHECK(SameBits(got.second, expected.second));
}

TEST_CASE("MaxPool2dAutograd sums with the other uses of relu's output", "[kernels]") {
  const Pooling p{{3, 2, 9, 7}, {2}, {}, {0}, {1}, true};
  const auto values = Values(p.shape, 7);
  auto run = [&](auto pool) {
    auto y = values.clone().requires_grad_();
    auto x = torch::relu(y);
    (pool(x, p).sum() * 2 + (x * x).sum()).backward();
    return y.grad();
  };
  CHECK(SameBits(run(Ours), run(Libtorchs)));
}

TEST_CASE("MaxPool2dAutograd differentiates twice (create_graph) as LibTorch does", "[kernels]") {
  const Pooling p{{2, 3, 6, 6}, {2}, {1}, {1}, {1}, false};
  const auto values = torch::randn(p.shape);
  auto run = [&](auto pool) {
    auto y = values.clone().requires_grad_();
    auto out = pool(torch::relu(y) * y, p);
    const auto grad = torch::autograd::grad({(out * out).sum()}, {y}, {}, /*retain_graph=*/true,
                                            /*create_graph=*/true)[0];
    (grad * grad).sum().backward();
    return std::make_pair(grad.detach(), y.grad());
  };
  const auto expected = run(Libtorchs);
  const auto got = run(Ours);
  CHECK(SameBits(got.first, expected.first));
  CHECK(SameBits(got.second, expected.second));
}

TEST_CASE("MaxPool2dAutograd refuses a backward after its input changed in place, as LibTorch does",
          "[kernels]") {
  const Pooling p{{1, 2, 6, 6}, {2}, {}, {0}, {1}, false};
  for (const bool relu : {true, false}) {
    CAPTURE(relu);
    auto y = torch::randn(p.shape).requires_grad_();
    auto x = relu ? torch::relu(y) : y * 2;
    auto out = Ours(x, p);
    x.mul_(2);
    CHECK_THROWS_WITH(out.sum().backward(), Catch::Contains("modified by an inplace operation"));
  }
}

TEST_CASE("MaxPool2dAutograd without grad mode computes the values only", "[kernels]") {
  const Pooling p{{2, 3, 12, 12}, {3}, {3}, {0}, {1}, false};
  const auto values = Values(p.shape, 8).requires_grad_();
  torch::NoGradGuard no_grad;
  const auto out = Ours(values, p);
  CHECK_FALSE(out.requires_grad());
  CHECK(SameBits(out, Libtorchs(values, p)));
}

TEST_CASE("MaxPool2dAutograd's backward splits planes across intra-op threads with the same result", "[kernels]") {
  const Pooling p{{8, 16, 26, 26}, {2}, {}, {0}, {1}, false};
  const auto values = Values(p.shape, 10);
  const int previous = torch::get_num_threads();
  torch::set_num_threads(1);
  const Run one = Backward(values, Before::kRelu, p, Ours, 1);
  torch::set_num_threads(2);
  const Run two = Backward(values, Before::kRelu, p, Ours, 1);
  torch::set_num_threads(previous);
  CHECK(SameBits(one.grad, two.grad));
}

TEST_CASE("ReplaceSlowCpuOps puts MaxPool2dAutograd behind torch::max_pool2d and nn::MaxPool2d", "[kernels]") {
  est::kernels::ReplaceSlowCpuOps();
  const auto y = Values({2, 4, 12, 12}, 11).requires_grad_();
  CHECK(torch::max_pool2d(torch::relu(y), 2).grad_fn()->name() == "est::kernels::MaxPool2dBackward");
  torch::nn::MaxPool2d module(torch::nn::MaxPool2dOptions(3).stride(2).padding(1));
  CHECK(module(y).grad_fn()->name() == "est::kernels::MaxPool2dBackward");
  // Inputs ours leaves alone get LibTorch's node, and its values.
  const auto channels_last = y.contiguous(torch::MemoryFormat::ChannelsLast);
  CHECK(torch::max_pool2d(channels_last, 2).grad_fn()->name() == "MaxPool2DWithIndicesBackward0");
  const auto doubles = y.to(torch::kDouble);
  CHECK(torch::max_pool2d(doubles, 2).grad_fn()->name() == "MaxPool2DWithIndicesBackward0");
  // A window of more positions than a winner's byte holds (12 × 12 > 128).
  CHECK(torch::max_pool2d(y, 12).grad_fn()->name() == "MaxPool2DWithIndicesBackward0");
  CHECK(torch::max_pool2d(y, {8, 12}).grad_fn()->name() == "est::kernels::MaxPool2dBackward");
  // Inference mode bypasses autograd's kernels altogether.
  torch::InferenceMode inference;
  const auto plain = Values({2, 4, 12, 12}, 11);
  CHECK(SameBits(torch::max_pool2d(plain, 2), Libtorchs(plain, {{2, 4, 12, 12}, {2}, {}, {0}, {1}, false})));
}

}  // namespace max_pool2d_autograd_test
