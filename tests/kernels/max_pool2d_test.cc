// MaxPool2dWithIndices gives LibTorch's max_pool2d_with_indices values and indices to the bit,
// and ReplaceSlowCpuOps puts it behind every call of the op.

#include "kernels/cpu_op_replacements.h"
#include "kernels/onednn_matmul.h"
#include "kernels/max_pool2d.h"
#include "kernels/max_pool2d_internal.h"

#include "tests/kernels/pooling_cases.h"
#include "tests/kernels/vector_bits.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/max_pool2d_with_indices_cpu_dispatch.h>
#include <c10/util/Exception.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

// The file's own names, apart from those of the tests compiled with it in one unit.
namespace max_pool2d_test {
namespace {

using est_test::Pooling;
using est_test::RandomPooling;
using est_test::SameBits;
using est_test::Values;

std::tuple<torch::Tensor, torch::Tensor> Ours(const torch::Tensor& input, const Pooling& p) {
  return est::kernels::MaxPool2dWithIndices(input, p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode);
}

// LibTorch's own CPU kernel, past the dispatcher (and so past any kernel registered over it).
std::tuple<torch::Tensor, torch::Tensor> Libtorchs(const torch::Tensor& input, const Pooling& p) {
  return at::cpu::max_pool2d_with_indices(input, p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode);
}

// Captures LibTorch's warnings while it lives.
class WarningLog : public c10::WarningHandler {
 public:
  void process(const c10::SourceLocation&, const std::string& message, const bool) override {
    messages.push_back(message);
  }
  std::vector<std::string> messages;
};

}  // namespace

TEST_CASE("MaxPool2dWithIndices equals LibTorch's kernel for random windows, strides, paddings and dilations",
          "[kernels]") {
  const int vector_bits = EST_GENERATE_VECTOR_BITS(512, 256);
  CAPTURE(vector_bits);
  EST_RUN_WITH_VECTOR_BITS_OR_SKIP(vector_bits);
  std::mt19937 random(71);
  int ours = 0, refused = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const Pooling p = RandomPooling(random);
    CAPTURE(trial, p);
    const auto input = Values(p.shape, static_cast<uint64_t>(trial));
    std::tuple<torch::Tensor, torch::Tensor> expected;
    try {
      expected = Libtorchs(input, p);
    } catch (const c10::Error&) {  // LibTorch refuses it (an output of no windows): so does ours
      CHECK_THROWS_AS(Ours(input, p), c10::Error);
      ++refused;
      continue;
    }
    ours += est::kernels::detail::MaxPool2dIsOurs(input, p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode);
    const auto [output, indices] = Ours(input, p);
    CHECK(SameBits(output, std::get<0>(expected)));
    CHECK(SameBits(indices, std::get<1>(expected)));
  }
  // The random geometries run our kernels nearly always; LibTorch refuses a few.
  CHECK(ours > 300);
  CHECK(refused < 40);
}

TEST_CASE("MaxPool2dWithIndices keeps a window's first maximum and its last NaN", "[kernels]") {
  const int vector_bits = EST_GENERATE_VECTOR_BITS(512, 256);
  CAPTURE(vector_bits);
  EST_RUN_WITH_VECTOR_BITS_OR_SKIP(vector_bits);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  // One row of 2×2 windows, each [top-left, top-right; bottom-left, bottom-right].
  const std::vector<std::vector<float>> windows = {{1, 2, 3, 4}, {2, 2, 2, 2},    {nan, 5, 1, nan},
                                                   {-inf, -inf, -inf, -inf}, {1, nan, -1, 9}, {-0.0f, 0.0f, 0, -0.0f}};
  const int64_t count = static_cast<int64_t>(windows.size());
  auto input = torch::empty({1, 1, 2, 2 * count});
  for (int64_t j = 0; j < count; ++j)
    for (int64_t k = 0; k < 4; ++k) input[0][0][k / 2][2 * j + k % 2] = windows[j][k];
  REQUIRE(est::kernels::detail::MaxPool2dIsOurs(input, {2}, {}, {0}, {1}, false));
  const auto [output, indices] = est::kernels::MaxPool2dWithIndices(input, {2}, {}, {0}, {1}, false);
  const auto at = indices.view(-1);
  const int64_t width = 2 * count;
  CHECK(at[0].item<int64_t>() == width + 1);  // 4, bottom-right
  CHECK(at[1].item<int64_t>() == 2);          // ties: the first
  CHECK(at[2].item<int64_t>() == width + 5);  // the last NaN
  CHECK(std::isnan(output.view(-1)[2].item<float>()));
  CHECK(at[3].item<int64_t>() == 6);  // all -inf: the first position
  CHECK(at[4].item<int64_t>() == 9);  // a NaN beats a larger number after it
  CHECK(at[5].item<int64_t>() == 10);
  CHECK(std::signbit(output.view(-1)[5].item<float>()));  // -0 first, and 0 is not greater
}

TEST_CASE("MaxPool2dWithIndices hands other inputs to LibTorch's kernel, with its results", "[kernels]") {
  const Pooling p{{2, 3, 9, 11}, {3}, {2}, {1}, {1}, true};
  const auto values = Values(p.shape, 3);
  for (const auto& input : {values.to(torch::kDouble), values.contiguous(torch::MemoryFormat::ChannelsLast),
                            values.transpose(2, 3), values.to(torch::kBFloat16)}) {
    CAPTURE(input.scalar_type(), input.strides());
    CHECK_FALSE(est::kernels::detail::MaxPool2dIsOurs(input, p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode));
    const auto [output, indices] = Ours(input, p);
    const auto expected = Libtorchs(input, p);
    CHECK(SameBits(output, std::get<0>(expected)));
    CHECK(SameBits(indices, std::get<1>(expected)));
  }
  // Arguments LibTorch refuses get LibTorch's error.
  CHECK_THROWS_WITH(est::kernels::MaxPool2dWithIndices(values, {4}, {1}, {3}, {1}, false),
                    Catch::Contains("pad should be at most half of kernel size"));
}

TEST_CASE("MaxPool2dWithIndices splits planes across intra-op threads with the same result", "[kernels]") {
  const Pooling p{{8, 16, 26, 26}, {2}, {}, {0}, {1}, false};
  const auto input = Values(p.shape, 77);
  const int previous = torch::get_num_threads();
  torch::set_num_threads(1);
  const auto one = Ours(input, p);
  torch::set_num_threads(2);
  const auto two = Ours(input, p);
  torch::set_num_threads(previous);
  CHECK(SameBits(std::get<0>(one), std::get<0>(two)));
  CHECK(SameBits(std::get<1>(one), std::get<1>(two)));
}

TEST_CASE("ReplaceSlowCpuOps puts the kernels behind torch::max_pool2d and autograd, without a warning",
          "[kernels]") {
  const Pooling p{{4, 8, 26, 26}, {2}, {}, {0}, {1}, false};
  const auto input = Values(p.shape, 9);
  const auto grad = torch::randn({4, 8, 13, 13});
  auto gradient_of_pool = [&] {
    auto x = input.clone().requires_grad_();
    torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2))(x).backward(grad);
    return x.grad();
  };
  const auto libtorch_gradient = gradient_of_pool();
  WarningLog log;
  {
    const c10::Warning::WarningHandlerGuard guard(&log);
    est::kernels::ReplaceSlowCpuOps();
    est::kernels::ReplaceSlowCpuOps();  // again: nothing more
    TORCH_WARN("a warning of the program's own");
  }
  REQUIRE(log.messages.size() == 1);  // the program's own warnings still reach its handler
  CHECK(log.messages[0] == "a warning of the program's own");
  const auto op = c10::Dispatcher::singleton().findSchema({"aten::max_pool2d_with_indices", ""});
  REQUIRE(op.has_value());
  CHECK(op->dumpState().find("cpu_op_replacements.cc") != std::string::npos);
  const auto [output, indices] = torch::max_pool2d_with_indices(input, p.kernel);
  const auto expected = Libtorchs(input, p);
  CHECK(SameBits(output, std::get<0>(expected)));
  CHECK(SameBits(indices, std::get<1>(expected)));
  CHECK(SameBits(gradient_of_pool(), libtorch_gradient));
  std::vector<std::string> replaced{"aten::max_pool2d_with_indices", "aten::max_pool2d (autograd)"};
  if (est::kernels::OneDnnMatmulRuns()) replaced.insert(replaced.end(), {"aten::mm (oneDNN)", "aten::addmm (oneDNN)"});
  CHECK(est::kernels::ReplacedCpuOps() == replaced);
}

}  // namespace max_pool2d_test
