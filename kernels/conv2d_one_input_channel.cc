#include "kernels/conv2d_one_input_channel.h"

#include <ATen/Parallel.h>
#include <torch/autograd.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>

#include "kernels/conv2d_one_input_channel_internal.h"
#include "kernels/cpu_vectors.h"

namespace est::kernels {
namespace {

using Geometry = detail::ConvGeometry;

#if defined(__x86_64__)
EST_BEGIN_AVX512_KERNELS

// Rows [y_begin, y_end) of one image's convolution by every filter, row y of filter c at
// out + c * filter_stride + (y - y_begin) * out_w: for each run of 16 outputs of a row, the
// K·K shifted input vectors are loaded once and serve every filter.
template <int K>
EST_TARGET_AVX512 void ConvolveRowsOf(const float* image, const float* weight, const float* bias, float* out,
                                      int64_t filter_stride, const Geometry& g, int64_t y_begin, int64_t y_end) {
  constexpr int kTaps = K * K;
  const int64_t out_w = g.out_width();
  for (int64_t y = y_begin; y < y_end; ++y) {
    for (int64_t x = 0; x < out_w; x += 16) {
      const __mmask16 mask = detail::FirstLanes16(out_w - x);
      __m512 taps[kTaps];
      for (int ky = 0; ky < K; ++ky)
        for (int kx = 0; kx < K; ++kx)
          taps[ky * K + kx] = _mm512_maskz_loadu_ps(mask, image + (y + ky) * g.width + x + kx);
      for (int64_t c = 0; c < g.channels; ++c) {
        const float* w = weight + c * kTaps;
        __m512 sum = _mm512_set1_ps(bias != nullptr ? bias[c] : 0.f);
        for (int t = 0; t < kTaps; ++t) sum = _mm512_fmadd_ps(taps[t], _mm512_set1_ps(w[t]), sum);
        _mm512_mask_storeu_ps(out + c * filter_stride + (y - y_begin) * out_w + x, mask, sum);
      }
    }
  }
}

// The weight and bias gradients of filters [first, first + P), each summed over the images,
// rows and runs of 16 outputs in that order, then across the 16 lanes: the P filters share
// each load of the input.
template <int K, int P>
EST_TARGET_AVX512 void GradientsOfFilters(const float* input, const float* grad, float* grad_weight, float* grad_bias,
                                          const Geometry& g, int64_t first) {
  constexpr int kTaps = K * K;
  const int64_t out_h = g.out_height(), out_w = g.out_width(), plane = out_h * out_w;
  __m512 sums[P][kTaps];
  __m512 bias_sums[P];
#pragma GCC unroll 32
  for (int p = 0; p < P; ++p) {
    bias_sums[p] = _mm512_setzero_ps();
#pragma GCC unroll 32
    for (int t = 0; t < kTaps; ++t) sums[p][t] = _mm512_setzero_ps();
  }
  for (int64_t n = 0; n < g.images; ++n) {
    const float* image = input + n * g.height * g.width;
    const float* gradient = grad + (n * g.channels + first) * plane;
    for (int64_t y = 0; y < out_h; ++y) {
      for (int64_t x = 0; x < out_w; x += 16) {
        const __mmask16 mask = detail::FirstLanes16(out_w - x);
        __m512 dy[P];
#pragma GCC unroll 32
        for (int p = 0; p < P; ++p) {
          dy[p] = _mm512_maskz_loadu_ps(mask, gradient + p * plane + y * out_w + x);
          bias_sums[p] = _mm512_add_ps(bias_sums[p], dy[p]);
        }
#pragma GCC unroll 32
        for (int ky = 0; ky < K; ++ky) {
#pragma GCC unroll 32
          for (int kx = 0; kx < K; ++kx) {
            const __m512 in = _mm512_maskz_loadu_ps(mask, image + (y + ky) * g.width + x + kx);
#pragma GCC unroll 32
            for (int p = 0; p < P; ++p) sums[p][ky * K + kx] = _mm512_fmadd_ps(dy[p], in, sums[p][ky * K + kx]);
          }
        }
      }
    }
  }
#pragma GCC unroll 32
  for (int p = 0; p < P; ++p) {
#pragma GCC unroll 32
    for (int t = 0; t < kTaps; ++t) grad_weight[(first + p) * kTaps + t] = _mm512_reduce_add_ps(sums[p][t]);
    if (grad_bias != nullptr) grad_bias[first + p] = _mm512_reduce_add_ps(bias_sums[p]);
  }
}

// The gradients of filters [begin, end): pairs of 3×3 filters share their loads (20 sums
// and the loads fit the 32 vector registers), 5×5 filters go one at a time.
template <int K>
EST_TARGET_AVX512 void FilterGradients(const float* input, const float* grad, float* grad_weight, float* grad_bias,
                                       Geometry g, int64_t begin, int64_t end) {
  constexpr int kPairs = K == 3 ? 2 : 1;
  int64_t c = begin;
  for (; c + kPairs <= end; c += kPairs) GradientsOfFilters<K, kPairs>(input, grad, grad_weight, grad_bias, g, c);
  for (; c < end; ++c) GradientsOfFilters<K, 1>(input, grad, grad_weight, grad_bias, g, c);
}
EST_END_AVX512_KERNELS
#endif

// Work per parallel task: enough outputs to be worth a hand-off.
int64_t Grain(int64_t outputs_per_item) { return detail::ParallelGrain(outputs_per_item, 65536); }

struct Conv2dOneInputChannelFunction : torch::autograd::Function<Conv2dOneInputChannelFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            const at::Tensor& bias) {
    const Geometry g = detail::ConvGeometryOf(input, weight);
    auto output = at::empty({g.images, g.channels, g.out_height(), g.out_width()}, input.options());
    const float* in = input.data_ptr<float>();
    const float* w = weight.data_ptr<float>();
    const float* b = bias.numel() > 0 ? bias.data_ptr<float>() : nullptr;
    float* out = output.data_ptr<float>();
    const int64_t image = g.height * g.width, plane = g.out_height() * g.out_width();
    at::parallel_for(0, g.images, Grain(g.channels * plane), [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n)
        detail::ConvolveRows(in + n * image, w, b, out + n * g.channels * plane, plane, g, 0, g.out_height());
    });
    ctx->save_for_backward({input, weight});
    ctx->saved_data["has_bias"] = bias.numel() > 0;
    return output;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    TORCH_CHECK(!at::GradMode::is_enabled(), "Conv2dOneInputChannel's gradient cannot be differentiated again");
    const auto saved = ctx->get_saved_variables();
    return detail::Conv2dOneInputChannelGradients(saved[0], saved[1], ctx->saved_data["has_bias"].toBool(),
                                                  grads[0].contiguous(), ctx->needs_input_grad(0));
  }
};

}  // namespace

namespace detail {

ConvGeometry ConvGeometryOf(const at::Tensor& input, const at::Tensor& weight) {
  return {input.size(0), weight.size(0), input.size(2), input.size(3), weight.size(2)};
}

void ConvolveRows(const float* image, const float* weight, const float* bias, float* out, int64_t filter_stride,
                  const ConvGeometry& g, int64_t y_begin, int64_t y_end) {
#if defined(__x86_64__)
  if (g.kernel == 3) return ConvolveRowsOf<3>(image, weight, bias, out, filter_stride, g, y_begin, y_end);
  ConvolveRowsOf<5>(image, weight, bias, out, filter_stride, g, y_begin, y_end);
#endif
}

torch::autograd::tensor_list Conv2dOneInputChannelGradients(const at::Tensor& input, const at::Tensor& weight,
                                                            bool has_bias, const at::Tensor& grad, bool input_grad) {
  const Geometry g = ConvGeometryOf(input, weight);
  at::Tensor grad_input;
  if (input_grad) grad_input = at::conv_transpose2d(grad, weight);
  auto grad_weight = at::empty(weight.sizes(), weight.options());
  at::Tensor grad_bias = has_bias ? at::empty({g.channels}, weight.options()) : at::Tensor();
#if defined(__x86_64__)
  const auto kernel = g.kernel == 3 ? FilterGradients<3> : FilterGradients<5>;
  const float* in = input.data_ptr<float>();
  const float* dy = grad.data_ptr<float>();
  float* dw = grad_weight.data_ptr<float>();
  float* db = has_bias ? grad_bias.data_ptr<float>() : nullptr;
  at::parallel_for(0, g.channels, Grain(g.images * g.out_height() * g.out_width()),
                   [&](int64_t begin, int64_t end) { kernel(in, dy, dw, db, g, begin, end); });
#endif
  return {grad_input, grad_weight, grad_bias};
}

bool Conv2dOneInputChannelFastPath(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias) {
  // Under CPU autocast LibTorch runs this op in bfloat16; so do we, by running LibTorch's.
  if (detail::CpuAutocastEnabled() || detail::InJitTrace()) return false;
  if (UsableVectorBits() < 512 || !IsContiguousFloatCpu(input) || !IsContiguousFloatCpu(weight)) return false;
  if (input.dim() != 4 || input.size(1) != 1 || input.size(0) == 0) return false;
  if (weight.dim() != 4 || weight.size(1) != 1 || weight.size(0) == 0 || weight.size(2) != weight.size(3)) return false;
  const int64_t k = weight.size(2);
  if ((k != 3 && k != 5) || input.size(2) < k || input.size(3) < k) return false;
  return IsAbsentOrFloatBias(bias, weight.size(0));
}

}  // namespace detail

at::Tensor Conv2dOneInputChannel(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias) {
  if (detail::Conv2dOneInputChannelFastPath(input, weight, bias)) {
    return Conv2dOneInputChannelFunction::apply(input, weight, detail::BiasOrEmpty(bias, weight));
  }
  // LibTorch's native convolution beats oneDNN's for one input channel; autocast knows conv2d.
  if (input.device().is_cpu() && weight.dim() == 4 && !detail::CpuAutocastEnabled() && !detail::InJitTrace())
    return torch::thnn_conv2d(input, weight, {weight.size(2), weight.size(3)}, bias, {1, 1}, {0, 0});
  return torch::conv2d(input, weight, bias);
}

}  // namespace est::kernels
