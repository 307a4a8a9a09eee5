// Conv2dReluMaxPool2x2 is ReluMaxPool2x2 after Conv2dOneInputChannel, bit for bit, values
// and gradients, on its own path and on the fallback.

#include "kernels/conv2d_relu_max_pool.h"

#include "kernels/conv2d_one_input_channel.h"
#include "kernels/relu_max_pool.h"
#include "tests/kernels/op_results.h"
#include "tests/kernels/vector_bits.h"

#include <torch/torch.h>

#include <vector>

#include <catch2/catch.hpp>

namespace {

bool SameAsTwoOps(const torch::Tensor& input, const torch::Tensor& weight, const torch::Tensor& bias) {
  const auto fused = est_test::RunOp(input, weight, bias, est::kernels::Conv2dReluMaxPool2x2);
  const auto two = est_test::RunOp(input, weight, bias, [](const auto& x, const auto& w, const auto& b) {
    return est::kernels::ReluMaxPool2x2(est::kernels::Conv2dOneInputChannel(x, w, b));
  });
  return est_test::SameResult(fused, two);
}

}  // namespace

TEST_CASE("Conv2dReluMaxPool2x2 equals Conv2dOneInputChannel then ReluMaxPool2x2, to the bit", "[kernels]") {
  const int vector_bits = EST_GENERATE_VECTOR_BITS(512, 256);  // its own kernels, then the two ops' fallbacks
  CAPTURE(vector_bits);
  EST_RUN_WITH_VECTOR_BITS_OR_SKIP(vector_bits);
  // Even and odd convolution heights and widths (an odd last row or column is outside every
  // window), rows past 16 outputs, 3×3 and 5×5 filters, odd filter counts.
  struct Case {
    std::vector<int64_t> input;
    int64_t filters, kernel;
  };
  const std::vector<Case> cases = {{{4, 1, 28, 28}, 32, 3}, {{2, 1, 9, 12}, 3, 3}, {{3, 1, 8, 39}, 5, 3},
                                   {{1, 1, 4, 4}, 1, 3},    {{2, 1, 12, 21}, 4, 5}, {{1, 1, 6, 40}, 3, 5}};
  torch::manual_seed(13);
  for (const Case& c : cases) {
    for (bool with_bias : {true, false}) {
      CAPTURE(c.input, c.filters, c.kernel, with_bias);
      CHECK(SameAsTwoOps(torch::randn(c.input), torch::randn({c.filters, 1, c.kernel, c.kernel}),
                         with_bias ? torch::randn({c.filters}) : torch::Tensor()));
    }
  }
}

TEST_CASE("Conv2dReluMaxPool2x2 runs the two ops where its kernels do not apply", "[kernels]") {
  torch::manual_seed(17);
  // A convolution of one row has no 2×2 window: LibTorch's max-pool refuses it, as it does
  // after the two ops.
  CHECK_THROWS_WITH(est::kernels::Conv2dReluMaxPool2x2(torch::randn({2, 1, 3, 9}), torch::randn({2, 1, 3, 3}),
                                                   torch::randn({2})),
                    Catch::Contains("Output size is too small"));
  CHECK(SameAsTwoOps(torch::randn({2, 2, 8, 8}), torch::randn({3, 2, 3, 3}), torch::randn({3})));  // 2 channels
  CHECK(SameAsTwoOps(torch::randn({2, 1, 8, 8}, torch::kDouble), torch::randn({3, 1, 3, 3}, torch::kDouble),
                     torch::randn({3}, torch::kDouble)));
}
