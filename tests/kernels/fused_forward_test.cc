// FusedForward: a module's forward traced and run as a graph with its convolution → relu →
// max-pool chains fused, LibTorch's values and gradients; eager where there is nothing to fuse,
// without grad mode, or where the chain's values are used elsewhere; a graph per input shape
// and training mode; the module's current parameters on every call; several threads.

#include "kernels/fused_forward.h"

#include "tests/kernels/pooling_cases.h"

#include <torch/torch.h>

#include <memory>
#include <set>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

// The file's own names, apart from those of the tests compiled with it in one unit.
namespace fused_forward_test {
namespace {

using est::kernels::FusedForward;
using est_test::SameBits;

// conv → relu → max-pool → dense, the way a user writes it; `channels` input channels.
struct ConvNetImpl : torch::nn::Module {
  explicit ConvNetImpl(int64_t channels, int64_t size)
      : conv(register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, 8, 3)))),
        pool(register_module("pool", torch::nn::MaxPool2d(2))),
        dense(register_module("dense", torch::nn::Linear(8 * ((size - 2) / 2) * ((size - 2) / 2), 5))) {}
  torch::Tensor forward(const torch::Tensor& x) { return dense(pool(torch::relu(conv(x))).flatten(1)); }
  torch::nn::Conv2d conv;
  torch::nn::MaxPool2d pool;
  torch::nn::Linear dense;
};
TORCH_MODULE(ConvNet);

// The output and every parameter's gradient of `forward` on `x`.
std::vector<torch::Tensor> OutputAndGradients(torch::nn::Module& module,
                                              const std::function<torch::Tensor(const torch::Tensor&)>& forward,
                                              const torch::Tensor& x) {
  for (auto& p : module.parameters()) p.mutable_grad() = torch::Tensor();
  const auto out = forward(x);
  out.pow(2).sum().backward();
  std::vector<torch::Tensor> results{out.detach()};
  for (const auto& p : module.parameters()) results.push_back(p.grad().clone());
  return results;
}

void CheckSameBits(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CHECK(SameBits(a[i], b[i]));
  }
}

TEST_CASE("FusedForward fuses the chain from the second call on, with LibTorch's values and gradients",
          "[kernels]") {
  torch::manual_seed(1);
  ConvNet net(1, 28);
  FusedForward fused(*net, [&](const torch::Tensor& x) { return net->forward(x); });
  const auto x = torch::rand({16, 1, 28, 28});
  const auto eager = OutputAndGradients(*net, [&](const torch::Tensor& in) { return net->forward(in); }, x);
  const auto traced = OutputAndGradients(*net, std::ref(fused), x);  // the tracing call runs eagerly
  CHECK(fused.last_fused_chains() == 0);
  CheckSameBits(traced, eager);
  const auto run = OutputAndGradients(*net, std::ref(fused), x);
  CHECK(fused.last_fused_chains() == 1);
  CheckSameBits(run, eager);
}

TEST_CASE("FusedForward fuses functional conv2d, relu_ and max_pool2d with padding, stride and ceil mode",
          "[kernels]") {
  torch::manual_seed(2);
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 20, 3).padding(1).stride(2));
  auto forward = [&](const torch::Tensor& x) {
    auto y = torch::conv2d(x, conv->weight, conv->bias, 2, 1);
    return torch::max_pool2d(torch::relu_(y), 3, 2, 1, 1, /*ceil_mode=*/true);
  };
  FusedForward fused(*conv, forward);
  const auto x = torch::randn({4, 3, 17, 19});
  const auto eager = OutputAndGradients(*conv, forward, x);
  fused(x);
  const auto run = OutputAndGradients(*conv, std::ref(fused), x);
  CHECK(fused.last_fused_chains() == 1);
  REQUIRE(run.size() == eager.size());
  for (size_t i = 0; i < run.size(); ++i) {
    CAPTURE(i);  // oneDNN may sum in another order than LibTorch's call: float32 rounding
    CHECK(torch::allclose(run[i], eager[i], 1e-5, 1e-5));
  }
}

TEST_CASE("FusedForward runs eagerly where there is nothing to fuse, without grad mode, and where the chain's "
          "values are used twice",
          "[kernels]") {
  torch::manual_seed(3);
  ConvNet net(1, 12);
  const auto x = torch::rand({2, 1, 12, 12});
  // conv's output also added to the result: fusing would lose it.
  FusedForward shared(*net, [&](const torch::Tensor& in) {
    const auto y = net->conv(in);
    return net->pool(torch::relu(y)).sum() + y.sum();
  });
  FusedForward no_pool(*net, [&](const torch::Tensor& in) { return torch::relu(net->conv(in)); });
  // conv2d's padding "same" is a string, not the fused op's list.
  auto same = [&](const torch::Tensor& in) {
    return torch::max_pool2d(torch::relu(torch::conv2d(in, net->conv->weight, net->conv->bias, 1, "same")), 2);
  };
  FusedForward same_padding(*net, same);
  FusedForward fused(*net, [&](const torch::Tensor& in) { return net->forward(in); });
  for (int call = 0; call < 2; ++call) {
    CHECK(SameBits(shared(x), net->pool(torch::relu(net->conv(x))).sum() + net->conv(x).sum()));
    CHECK(shared.last_fused_chains() == 0);
    CHECK(SameBits(no_pool(x), torch::relu(net->conv(x))));
    CHECK(no_pool.last_fused_chains() == 0);
    CHECK(SameBits(same_padding(x), same(x)));
    CHECK(same_padding.last_fused_chains() == 0);
  }
  torch::NoGradGuard no_grad;
  CHECK(SameBits(fused(x), net->forward(x)));
  CHECK(SameBits(fused(x), net->forward(x)));
  CHECK(fused.last_fused_chains() == 0);
}

TEST_CASE("FusedForward traces once per input shape and training mode and reads the current parameters",
          "[kernels]") {
  torch::manual_seed(4);
  ConvNet net(1, 10);
  FusedForward fused(*net, [&](const torch::Tensor& in) { return net->forward(in); });
  torch::optim::SGD sgd(net->parameters(), 0.1);
  std::set<int64_t> traced;
  for (int64_t batch : {3, 5, 3, 5}) {
    const auto x = torch::rand({batch, 1, 10, 10});
    fused(x);
    CAPTURE(batch);
    CHECK(fused.last_fused_chains() == (traced.insert(batch).second ? 0 : 1));  // the first call traces
    const auto eager = net->forward(x);
    const auto out = fused(x);
    CHECK(fused.last_fused_chains() == 1);
    CHECK(SameBits(out, eager));
    // A step changes the parameters in place: the next call reads the new values.
    sgd.zero_grad();
    out.sum().backward();
    sgd.step();
  }
  net->eval();
  const auto x = torch::rand({3, 1, 10, 10});
  fused(x);
  CHECK(fused.last_fused_chains() == 0);  // a new signature: traced again
  CHECK(SameBits(fused(x), net->forward(x)));
  CHECK(fused.last_fused_chains() == 1);
}

TEST_CASE("FusedForward gives the same results from several threads at once", "[kernels]") {
  torch::manual_seed(5);
  ConvNet net(1, 16);
  FusedForward fused(*net, [&](const torch::Tensor& in) { return net->forward(in); });
  const auto x = torch::rand({4, 1, 16, 16});
  const auto expected = net->forward(x).detach();
  std::vector<torch::Tensor> results(6);
  std::vector<std::thread> threads;
  for (auto& result : results)
    threads.emplace_back([&] {
      for (int i = 0; i < 3; ++i) result = fused(x).detach();
    });
  for (auto& thread : threads) thread.join();
  for (const auto& result : results) CHECK(SameBits(result, expected));
}

}  // namespace
}  // namespace fused_forward_test
