#include "kernels/conv2d_relu_max_pool.h"

#include <ATen/Parallel.h>
#include <torch/autograd.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/conv2d_one_input_channel.h"
#include "kernels/conv2d_one_input_channel_internal.h"
#include "kernels/cpu_vectors.h"
#include "kernels/relu_max_pool.h"
#include "kernels/relu_max_pool_internal.h"

namespace est::kernels {
namespace {

struct Conv2dReluMaxPoolFunction : torch::autograd::Function<Conv2dReluMaxPoolFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            const at::Tensor& bias) {
    const detail::ConvGeometry g = detail::ConvGeometryOf(input, weight);
    const int64_t conv_w = g.out_width(), pooled_h = g.out_height() / 2, pooled_w = conv_w / 2;
    auto output = at::empty({g.images, g.channels, pooled_h, pooled_w}, input.options());
    auto code = at::empty(output.sizes(), input.options().dtype(at::kByte));
    const float* in = input.data_ptr<float>();
    const float* w = weight.data_ptr<float>();
    const float* b = bias.numel() > 0 ? bias.data_ptr<float>() : nullptr;
    float* out = output.data_ptr<float>();
    uint8_t* codes = code.data_ptr<uint8_t>();
    const int64_t grain = detail::ParallelGrain(g.channels * g.out_height() * conv_w, 65536);
    at::parallel_for(0, g.images, grain, [&](int64_t begin, int64_t end) {
      // Two rows of the convolution by every filter: filter c's at rows[c * 2 * conv_w].
      std::vector<float> rows(static_cast<size_t>(g.channels * 2 * conv_w));
      const detail::ReluMaxPoolForwardRow pool = detail::ReluMaxPoolForwardRowKernel();
      for (int64_t n = begin; n < end; ++n) {
        for (int64_t i = 0; i < pooled_h; ++i) {
          detail::ConvolveRows(in + n * g.height * g.width, w, b, rows.data(), 2 * conv_w, g, 2 * i, 2 * i + 2);
          for (int64_t c = 0; c < g.channels; ++c) {
            const float* top = rows.data() + c * 2 * conv_w;
            const int64_t at = ((n * g.channels + c) * pooled_h + i) * pooled_w;
            pool(top, top + conv_w, out + at, codes + at, pooled_w);
          }
        }
      }
    });
    ctx->save_for_backward({input, weight, code});
    ctx->saved_data["has_bias"] = bias.numel() > 0;
    return output;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    TORCH_CHECK(!at::GradMode::is_enabled(), "Conv2dReluMaxPool2x2's gradient cannot be differentiated again");
    const auto saved = ctx->get_saved_variables();
    const detail::ConvGeometry g = detail::ConvGeometryOf(saved[0], saved[1]);
    const at::Tensor conv_grad = detail::ReluMaxPool2x2Backward(grads[0], saved[2], g.out_height(), g.out_width());
    return detail::Conv2dOneInputChannelGradients(saved[0], saved[1], ctx->saved_data["has_bias"].toBool(), conv_grad,
                                                  ctx->needs_input_grad(0));
  }
};

}  // namespace

at::Tensor Conv2dReluMaxPool2x2(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias) {
  if (!detail::Conv2dOneInputChannelFastPath(input, weight, bias) || input.size(2) - weight.size(2) + 1 < 2 ||
      input.size(3) - weight.size(3) + 1 < 2)
    return ReluMaxPool2x2(Conv2dOneInputChannel(input, weight, bias));
  return Conv2dReluMaxPoolFunction::apply(input, weight, detail::BiasOrEmpty(bias, weight));
}

}  // namespace est::kernels
