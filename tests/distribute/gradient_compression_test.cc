#include "distribute/gradient_compression.h"

#include <torch/torch.h>

#include "common/error.h"
#include "distribute/collective/collective.h"
#include "distribute/gradient_reducer.h"
#include "tests/distribute/gloo_ranks.h"

#include <catch2/catch.hpp>

using namespace est::distribute;
using est::testing::ConnectGlooRanks;
using est::testing::RunRanks;

namespace {

// Runs `steps` steps of a reducer with `compression` on every rank of a world of 2 over
// one float32 parameter of `numel` values, whose gradient on rank r at step s is
// gradient(r, s). Returns rank 0's averaged gradient of each step.
std::vector<torch::Tensor> ReduceSteps(GradientCompression compression, int steps, int64_t numel,
                                       const std::function<torch::Tensor(int, int)>& gradient) {
  const int world = 2;
  auto collectives = ConnectGlooRanks(world, /*shared_memory=*/false);
  auto results = RunRanks<std::vector<torch::Tensor>>(world, [&](int rank) {
    torch::Tensor parameter = torch::zeros({numel}, torch::requires_grad());
    GradientReducer reducer(*collectives[rank], {parameter}, world, GradientReducerOptions().compression(compression));
    std::vector<torch::Tensor> averages;
    for (int step = 0; step < steps; ++step) {
      parameter.mutable_grad() = torch::Tensor();
      reducer.prepare();
      (parameter * gradient(rank, step)).sum().backward();
      reducer.finish();
      averages.push_back(parameter.grad().clone());
    }
    return averages;
  });
  for (size_t step = 0; step < results[0].size(); ++step) CHECK(torch::equal(results[0][step], results[1][step]));
  return results[0];
}

}  // namespace

TEST_CASE("gradient compression names parse and print", "[distribute]") {
  for (GradientCompression compression :
       {GradientCompression::kNone, GradientCompression::kFloat16, GradientCompression::kBFloat16}) {
    CHECK(ParseGradientCompression(GradientCompressionName(compression), "--flag") == compression);
  }
  CHECK_THROWS_WITH(ParseGradientCompression("int8", "--gradient-compression"),
                    Catch::Contains("--gradient-compression") && Catch::Contains("'int8'") &&
                        Catch::Contains("none, fp16, bf16 or powersgd"));
}

TEST_CASE("compressed gradient averages are within the 16-bit type's rounding of the exact ones", "[distribute]") {
  // Relative half-ulp of each type (one rounding of each rank's value, one of their sum).
  for (const auto& [compression, unit] : {std::pair{GradientCompression::kFloat16, 1.0 / 2048},
                                          std::pair{GradientCompression::kBFloat16, 1.0 / 256}}) {
    INFO(GradientCompressionName(compression));
    auto value = [](int rank, int step) {
      return torch::linspace(0.5, 4.0, 4099) * (1.0 + 0.01 * rank) * (1 + step);
    };
    const auto averages = ReduceSteps(compression, 1, 4099, value);
    const torch::Tensor exact = (value(0, 0) + value(1, 0)) / 2;
    const torch::Tensor relative = ((averages[0] - exact).abs() / exact).max();
    CHECK(relative.item<double>() <= 2 * unit);
    CHECK(relative.item<double>() > 0);  // the values were rounded: compression happened
  }
}

TEST_CASE("error feedback sends over later steps what one step's rounding dropped", "[distribute]") {
  // Both ranks' gradient is 1 + 2^-10 every step: bfloat16 rounds its half (the value each
  // rank sends) to 0.5, dropping 2^-11 each time. Without error feedback, 100 steps would
  // lose 100 · 2^-10 ≈ 0.098 of the summed averages; with it, what is lost is what the two
  // ranks' residuals hold at the end, at most half a bfloat16 unit (2^-9) each, however
  // many steps run. (The ranks send the same value, so their sum is exact.)
  const int steps = 100;
  const float gradient = 1.0f + std::ldexp(1.0f, -10);
  const auto averages = ReduceSteps(GradientCompression::kBFloat16, steps, 3,
                                    [&](int, int) { return torch::full({3}, gradient); });
  torch::Tensor total = torch::zeros({3});
  bool some_step_rounded = false;
  for (const auto& average : averages) {
    total += average;
    some_step_rounded |= !torch::equal(average, torch::full({3}, gradient));
  }
  CHECK(some_step_rounded);
  CHECK(((total - steps * gradient).abs() <= std::ldexp(2.0, -9)).all().item<bool>());
}

TEST_CASE("with compression the extras stay exact float32 in a bucket of their own", "[distribute]") {
  const int world = 2;
  auto collectives = ConnectGlooRanks(world, /*shared_memory=*/false);
  auto results = RunRanks<torch::Tensor>(world, [&](int rank) {
    torch::Tensor parameter = torch::zeros({10}, torch::requires_grad());
    GradientReducer reducer(*collectives[rank], {parameter}, world,
                            GradientReducerOptions().compression(GradientCompression::kFloat16), /*extras_numel=*/2);
    CHECK(reducer.bucket_bytes() == std::vector<int64_t>{40, 8});
    reducer.prepare(torch::tensor({1.0f / 3 + static_cast<float>(rank), 1e-7f * static_cast<float>(rank + 1)}));
    (parameter * 2.0f).sum().backward();
    reducer.finish();
    CHECK(torch::equal(parameter.grad(), torch::full({10}, 2.0f)));
    return reducer.extras().clone();
  });
  const torch::Tensor expected =
      torch::stack({(torch::scalar_tensor(1.0f / 3) + torch::scalar_tensor(1.0f / 3 + 1.0f)) / 2,
                    (torch::scalar_tensor(1e-7f) + torch::scalar_tensor(2e-7f)) / 2});
  for (const auto& extras : results) CHECK(torch::equal(extras, expected));
}

TEST_CASE("float16 compression of values beyond its range leaves no lasting residual", "[distribute]") {
  // Step 0's average (1e6) overflows float16: that step's gradient is infinite, as DDP's
  // fp16 hook gives; the residual does not keep the infinity, so step 1 is exact again.
  const auto averages = ReduceSteps(GradientCompression::kFloat16, 2, 4, [](int, int step) {
    return torch::full({4}, step == 0 ? 1e6f : 3.0f);
  });
  CHECK(torch::isinf(averages[0]).all().item<bool>());
  CHECK(torch::equal(averages[1], torch::full({4}, 3.0f)));
}
