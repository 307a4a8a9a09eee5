// MaxPool2dWithIndices gives LibTorch's max_pool2d_with_indices values and indices to the bit,
// and ReplaceSlowCpuOps puts it behind every call of the op.

#include "kernels/cpu_op_replacements.h"
#include "kernels/max_pool2d.h"
#include "kernels/max_pool2d_internal.h"

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

// One call's arguments.
struct Pooling {
  std::vector<int64_t> shape, kernel, stride, padding, dilation;
  bool ceil_mode = false;
};

std::ostream& operator<<(std::ostream& out, const Pooling& p) {
  auto list = [&](const std::vector<int64_t>& v) {
    out << "[";
    for (size_t i = 0; i < v.size(); ++i) out << (i ? "," : "") << v[i];
    out << "] ";
  };
  out << "shape ";
  list(p.shape);
  out << "kernel ";
  list(p.kernel);
  out << "stride ";
  list(p.stride);
  out << "padding ";
  list(p.padding);
  out << "dilation ";
  list(p.dilation);
  return out << "ceil_mode " << p.ceil_mode;
}

// Values with many ties, zeros of both signs, infinities and some NaNs.
torch::Tensor Values(const std::vector<int64_t>& shape, uint64_t seed) {
  torch::manual_seed(seed);
  auto values = torch::randint(-3, 4, shape).to(torch::kFloat32).mul_(0.5);
  auto flat = values.view(-1);
  const int64_t n = flat.numel();
  const float special[] = {std::numeric_limits<float>::quiet_NaN(), -0.0f,
                           -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity()};
  for (float value : special)
    flat.index_put_({torch::randint(n, {std::max<int64_t>(1, n / 40)}, torch::kLong)}, value);
  return values;
}

// The same shape and the same bits: NaNs of the same payload in the same places.
bool SameBits(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
  if (a.scalar_type() == torch::kFloat) return torch::equal(a.contiguous().view(torch::kInt), b.contiguous().view(torch::kInt));
  if (a.scalar_type() == torch::kDouble) return torch::equal(a.contiguous().view(torch::kLong), b.contiguous().view(torch::kLong));
  if (a.scalar_type() == torch::kBFloat16) return torch::equal(a.contiguous().view(torch::kShort), b.contiguous().view(torch::kShort));
  return torch::equal(a, b);
}

std::tuple<torch::Tensor, torch::Tensor> Ours(const torch::Tensor& input, const Pooling& p) {
  return est::kernels::MaxPool2dWithIndices(input, p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode);
}

// LibTorch's own CPU kernel, past the dispatcher (and so past any kernel registered over it).
std::tuple<torch::Tensor, torch::Tensor> Libtorchs(const torch::Tensor& input, const Pooling& p) {
  return at::cpu::max_pool2d_with_indices(input, p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode);
}

// A pooling of random geometry: windows 1 to 5 wide, strides 1 to 4 (sometimes left to default
// to the window), paddings up to half the window, dilations 1 to 3, planes 1 to 40 wide.
Pooling RandomPooling(std::mt19937& random) {
  auto in = [&](int64_t low, int64_t high) { return std::uniform_int_distribution<int64_t>(low, high)(random); };
  Pooling p;
  p.shape = {in(1, 3), in(1, 4), in(1, 40), in(1, 40)};
  if (in(0, 5) == 0) p.shape.erase(p.shape.begin());  // 3-D: [C, H, W]
  p.kernel = {in(1, 5), in(1, 5)};
  if (in(0, 4) != 0) p.stride = {in(1, 4), in(1, 4)};
  p.padding = {in(0, p.kernel[0] / 2), in(0, p.kernel[1] / 2)};
  p.dilation = {in(0, 2) == 0 ? in(2, 3) : 1, in(0, 2) == 0 ? in(2, 3) : 1};
  p.ceil_mode = in(0, 1) == 1;
  if (in(0, 5) == 0) {  // one value for both dimensions
    p.kernel.resize(1);
    p.padding.resize(1);
    p.dilation.resize(1);
    if (!p.stride.empty()) p.stride.resize(1);
  }
  return p;
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
  CHECK(est::kernels::ReplacedCpuOps() == std::vector<std::string>{"aten::max_pool2d_with_indices"});
}

}  // namespace max_pool2d_test
