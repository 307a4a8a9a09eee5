// OneDnnMm and OneDnnAddmm: within float32's rounding bound of the exact product on random
// shapes and layouts, LibTorch's own results for what they hand back, NaN and infinity as
// LibTorch's, behind the dispatcher for torch::mm and torch::nn::Linear, across threads.

#include "kernels/cpu_op_replacements.h"
#include "kernels/onednn_matmul.h"

#include "tests/skip.h"

#include <ATen/Parallel.h>
#include <ATen/ops/addmm_cpu_dispatch.h>
#include <ATen/ops/mm_cpu_dispatch.h>
#include <torch/torch.h>

#include <algorithm>
#include <cfloat>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

// The file's own names, apart from those of the tests compiled with it in one unit.
namespace onednn_matmul_test {
namespace {

using est::kernels::OneDnnAddmm;
using est::kernels::OneDnnMatmulTakes;
using est::kernels::OneDnnMm;

// Where oneDNN's matmul does not run in this build or on this CPU, says so (CTest: Skipped).
#define EST_REQUIRE_ONEDNN_MATMUL_OR_SKIP()                                                              \
  if (!est::kernels::OneDnnMatmulRuns())                                                                 \
  EST_SKIP("needs oneDNN's brgemm matmul: AVX-512, and a LibTorch that links the shared oneDNN (this " \
           "build: EST_ONEDNN_MATMUL, this CPU's oneDNN kernel)")

// How a [rows, cols] matrix lies in memory.
enum class Layout { kRows, kColumns, kPaddedRows, kPaddedColumns };

torch::Tensor Matrix(int64_t rows, int64_t cols, Layout layout) {
  switch (layout) {
    case Layout::kRows:
      return torch::randn({rows, cols});
    case Layout::kColumns:
      return torch::randn({cols, rows}).t();
    case Layout::kPaddedRows:
      return torch::randn({rows, cols + 3}).narrow(1, 1, cols);
    case Layout::kPaddedColumns:
      return torch::randn({cols, rows + 5}).narrow(1, 2, rows).t();
  }
  return {};
}

// Whether a [rows, cols] matrix of `layout` has no gaps (a padded one with a single row or
// column has none either).
bool IsDense(Layout layout, int64_t rows, int64_t cols) {
  return layout == Layout::kRows || layout == Layout::kColumns || (layout == Layout::kPaddedRows && rows == 1) ||
         (layout == Layout::kPaddedColumns && cols == 1);
}

// Each element of `got` within the bound on float32 sums of K products (K + 1 roundings, the
// bias's included) of the exact a @ b (+ bias), computed in float64 by LibTorch's kernel.
void RequireWithinRounding(const torch::Tensor& got, const torch::Tensor& a, const torch::Tensor& b,
                           const torch::Tensor& bias = {}) {
  REQUIRE(got.scalar_type() == torch::kFloat);
  REQUIRE(got.sizes() == torch::IntArrayRef{a.size(0), b.size(1)});
  auto exact = at::cpu::mm(a.to(torch::kDouble), b.to(torch::kDouble));
  auto magnitude = at::cpu::mm(a.abs().to(torch::kDouble), b.abs().to(torch::kDouble));
  if (bias.defined()) {
    exact = exact + bias.to(torch::kDouble).reshape({1, -1});
    magnitude = magnitude + bias.abs().to(torch::kDouble).reshape({1, -1});
  }
  const auto bound = magnitude * (static_cast<double>(a.size(1) + 1) * FLT_EPSILON);
  const auto error = (got.to(torch::kDouble) - exact).abs();
  INFO("largest error " << error.max().item<double>() << ", its bound " << bound.max().item<double>());
  REQUIRE((error <= bound).all().item<bool>());
}

bool SameBits(const torch::Tensor& a, const torch::Tensor& b) {
  return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() &&
         torch::equal(a.contiguous().view(torch::kInt32), b.contiguous().view(torch::kInt32));
}

TEST_CASE("OneDnnMm: random shapes and layouts, within float32 rounding of the exact product [skippable]",
          "[kernels][skippable]") {
  EST_REQUIRE_ONEDNN_MATMUL_OR_SKIP();
  std::mt19937 random(7);
  std::uniform_int_distribution<int64_t> size(1, 160), layout(0, 5);
  torch::manual_seed(7);
  int taken = 0;
  for (int trial = 0; trial < 150; ++trial) {
    const int64_t m = size(random), n = size(random), k = trial % 10 == 0 ? 5408 : size(random);
    // Dense layouts twice as often as padded ones.
    const auto a_layout = static_cast<Layout>(layout(random) % 4), b_layout = static_cast<Layout>(layout(random) % 4);
    const auto a = Matrix(m, k, a_layout), b = Matrix(k, n, b_layout);
    INFO("m " << m << " n " << n << " k " << k << " strides " << a.strides() << " " << b.strides());
    const auto got = OneDnnMm(a, b);
    REQUIRE(got.is_contiguous());
    const bool dense = IsDense(a_layout, m, k) && IsDense(b_layout, k, n);
    REQUIRE(OneDnnMatmulTakes(a, b) == (dense && m * n * k >= est::kernels::kOneDnnMatmulMinMacs));
    if (OneDnnMatmulTakes(a, b)) {
      ++taken;
      RequireWithinRounding(got, a, b);
    } else {
      REQUIRE(SameBits(got, at::cpu::mm(a, b)));
    }
  }
  REQUIRE(taken > 40);
}

TEST_CASE("OneDnnMm: what oneDNN does not take is LibTorch's result [skippable]", "[kernels][skippable]") {
  EST_REQUIRE_ONEDNN_MATMUL_OR_SKIP();
  torch::manual_seed(3);
  const auto a = torch::randn({64, 96}), b = torch::randn({96, 48});
  REQUIRE(OneDnnMatmulTakes(a, b));
  const std::vector<std::pair<torch::Tensor, torch::Tensor>> handed_back{
      {torch::randn({64, 96}, torch::kDouble), torch::randn({96, 48}, torch::kDouble)},  // another dtype
      {torch::randn({128, 192}).slice(0, 0, 128, 2).slice(1, 0, 192, 2), b},            // no unit stride
      {torch::randn({64, 100}).narrow(1, 0, 96), b},                                    // gaps between rows
      {torch::randn({1, 96}).expand({64, 96}), b},                                      // expanded rows
      {torch::randn({64, 0}), torch::randn({0, 48})},                                   // K = 0: zeros
      {torch::randn({0, 96}), b},                                                       // no rows
      {torch::randn({8, 8}), torch::randn({8, 8})},                                     // too small to pay
  };
  for (const auto& [x, y] : handed_back) {
    INFO("sizes " << x.sizes() << " " << y.sizes() << " strides " << x.strides());
    REQUIRE_FALSE(OneDnnMatmulTakes(x, y));
    REQUIRE(SameBits(OneDnnMm(x, y), at::cpu::mm(x, y)));
  }
  // Mismatched shapes get LibTorch's error, not a crash.
  REQUIRE_THROWS_WITH(OneDnnMm(a, a), Catch::Contains("cannot be multiplied"));
}

TEST_CASE("OneDnnAddmm: a bias row added in the same pass; other forms are LibTorch's [skippable]",
          "[kernels][skippable]") {
  EST_REQUIRE_ONEDNN_MATMUL_OR_SKIP();
  torch::manual_seed(11);
  const auto x = torch::randn({64, 5408}), w = torch::randn({64, 5408}).t();
  for (const auto& bias : {torch::randn({64}), torch::randn({1, 64})}) {
    INFO("bias sizes " << bias.sizes());
    RequireWithinRounding(OneDnnAddmm(bias, x, w, 1, 1), x, w, bias.reshape({-1}));
  }
  const auto row = torch::randn({64});
  const std::vector<std::tuple<torch::Tensor, double, double>> handed_back{
      {row, 0.5, 1.0}, {row, 1.0, 2.0}, {torch::randn({64, 64}), 1.0, 1.0}, {torch::randn({64}, torch::kDouble), 1, 1}};
  for (const auto& [self, beta, alpha] : handed_back) {
    INFO("self " << self.sizes() << " beta " << beta << " alpha " << alpha);
    if (self.scalar_type() != torch::kFloat) {
      REQUIRE_THROWS(OneDnnAddmm(self, x, w, beta, alpha));  // LibTorch's dtype error
      continue;
    }
    REQUIRE(SameBits(OneDnnAddmm(self, x, w, beta, alpha), at::cpu::addmm(self, x, w, beta, alpha)));
  }
  // beta = 0 ignores self, NaN included, as LibTorch's does.
  const auto nan_row = torch::full({64}, std::nan(""));
  REQUIRE_FALSE(OneDnnAddmm(nan_row, x, w, 0, 1).isnan().any().item<bool>());
}

TEST_CASE("OneDnnMm: NaN and infinity reach the same elements as in the exact product [skippable]",
          "[kernels][skippable]") {
  EST_REQUIRE_ONEDNN_MATMUL_OR_SKIP();
  torch::manual_seed(5);
  auto a = torch::randn({64, 200}), b = torch::randn({200, 64});
  a.index_put_({3, 17}, std::nan(""));
  a.index_put_({9, 0}, std::numeric_limits<float>::infinity());
  b.index_put_({5, 40}, -std::numeric_limits<float>::infinity());
  b.index_put_({0, 2}, 0.0f);  // inf · 0 in row 9, column 2: NaN
  REQUIRE(OneDnnMatmulTakes(a, b));
  const auto got = OneDnnMm(a, b);
  const auto exact = at::cpu::mm(a.to(torch::kDouble), b.to(torch::kDouble));
  REQUIRE(torch::equal(got.isnan(), exact.isnan()));
  REQUIRE(torch::equal(got.isinf(), exact.isinf()));
  REQUIRE(torch::equal(got.isinf() & (got > 0), exact.isinf() & (exact > 0)));
  REQUIRE(got.isnan().sum().item<int64_t>() > 64);  // row 3 whole, and (9, 2)
}

TEST_CASE("OneDnnMm: behind torch::mm and torch::nn::Linear once ReplaceSlowCpuOps has run [skippable]",
          "[kernels][skippable]") {
  EST_REQUIRE_ONEDNN_MATMUL_OR_SKIP();
  est::kernels::ReplaceSlowCpuOps();
  const auto ops = est::kernels::ReplacedCpuOps();
  REQUIRE(std::find(ops.begin(), ops.end(), "aten::mm (oneDNN)") != ops.end());
  REQUIRE(std::find(ops.begin(), ops.end(), "aten::addmm (oneDNN)") != ops.end());
  torch::manual_seed(13);
  const auto a = torch::randn({64, 700}), b = torch::randn({700, 64});
  REQUIRE(SameBits(torch::mm(a, b), OneDnnMm(a, b)));
  // A linear layer: forward addmm with the bias, backward the two products of its gradients.
  torch::nn::Linear linear(700, 64);
  const auto x = torch::randn({64, 700}).requires_grad_();
  const auto y = linear->forward(x);
  const auto g = torch::randn({64, 64});
  y.backward(g);
  const auto w = linear->weight.detach(), bias = linear->bias.detach();
  REQUIRE(SameBits(y.detach(), OneDnnAddmm(bias, x.detach(), w.t(), 1, 1)));
  REQUIRE(SameBits(x.grad(), OneDnnMm(g, w)));
  REQUIRE(SameBits(linear->weight.grad(), OneDnnMm(g.t(), x.detach())));
  RequireWithinRounding(linear->weight.grad(), g.t(), x.detach());
}

TEST_CASE("OneDnnMm: two threads at once, and two intra-op threads, each within rounding [skippable]",
          "[kernels][skippable]") {
  EST_REQUIRE_ONEDNN_MATMUL_OR_SKIP();
  torch::manual_seed(17);
  const auto a = torch::randn({128, 900}), b = torch::randn({900, 80});
  const auto c = torch::randn({64, 64}).t(), d = torch::randn({64, 3000});
  std::vector<torch::Tensor> first(20), second(20);
  std::thread other([&] {
    for (auto& result : second) result = OneDnnMm(c, d);
  });
  for (auto& result : first) result = OneDnnMm(a, b);
  other.join();
  for (const auto& result : first) REQUIRE(SameBits(result, first.front()));
  for (const auto& result : second) REQUIRE(SameBits(result, second.front()));
  RequireWithinRounding(first.front(), a, b);
  RequireWithinRounding(second.front(), c, d);
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  const auto two = OneDnnMm(a, b);
  at::set_num_threads(threads);
  RequireWithinRounding(two, a, b);
}

}  // namespace
}  // namespace onednn_matmul_test
