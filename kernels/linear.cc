#include "kernels/linear.h"

#include <ATen/Parallel.h>
#include <torch/autograd.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/cpu_vectors.h"

namespace est::kernels {
namespace {

// C[M, N] = A[M, K] · B[K, N]: A at any strides, B with contiguous rows, C with contiguous rows.
struct Product {
  const float* a;
  int64_t a_row_stride, a_column_stride;
  const float* b;
  int64_t b_row_stride;
  float* c;
  int64_t c_row_stride;
  int64_t m, n, k;
};

#if defined(__x86_64__)
EST_BEGIN_AVX512_KERNELS

constexpr int kRows = 8;      // rows of C per block: 8 × 2 vectors of sums
constexpr int kColumns = 32;  // columns of C per strip: two vectors

// Columns [column, column + 32) of rows [row, row + kRows) of C, from A's rows packed as
// `panel` [K][kRows] (rows past M packed as zeros, their sums not stored).
EST_TARGET_AVX512 void MultiplyBlock(const Product& p, const float* panel, int64_t row, int64_t column) {
  const __mmask16 low = detail::FirstLanes16(p.n - column), high = detail::FirstLanes16(p.n - column - 16);
  __m512 sums[kRows][2];
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) sums[r][0] = sums[r][1] = _mm512_setzero_ps();
  const float* b = p.b + column;
  for (int64_t k = 0; k < p.k; ++k) {
    const __m512 b0 = _mm512_maskz_loadu_ps(low, b + k * p.b_row_stride);
    const __m512 b1 = _mm512_maskz_loadu_ps(high, b + k * p.b_row_stride + 16);
    const float* a = panel + k * kRows;
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      const __m512 ar = _mm512_set1_ps(a[r]);
      sums[r][0] = _mm512_fmadd_ps(ar, b0, sums[r][0]);
      sums[r][1] = _mm512_fmadd_ps(ar, b1, sums[r][1]);
    }
  }
  const int64_t rows = std::min<int64_t>(kRows, p.m - row);
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
    if (r >= rows) break;
    float* c = p.c + (row + r) * p.c_row_stride + column;
    _mm512_mask_storeu_ps(c, low, sums[r][0]);
    _mm512_mask_storeu_ps(c + 16, high, sums[r][1]);
  }
}

// Strips [begin, end) of 32 columns of C, every row block each.
EST_TARGET_AVX512 void MultiplyStrips(const Product& p, const std::vector<float>& panels, int64_t begin, int64_t end) {
  for (int64_t strip = begin; strip < end; ++strip)
    for (int64_t row = 0; row < p.m; row += kRows)
      MultiplyBlock(p, panels.data() + (row / kRows) * p.k * kRows, row, strip * kColumns);
}

// C[M, N] = A[M, K] · B[N, K]ᵀ with the rows of A and B contiguous: the forward product of a
// dense layer. Blocks of 4 × 4 outputs, each a sum of 16-lane products along K, over K in
// chunks that keep the rows of both in the caches, then across the lanes.
constexpr int kDotRows = 4;
constexpr int64_t kDotChunk = 1024;

struct DotProduct {
  const float* a;
  const float* b;
  float* c;
  int64_t m, n, k;
};

EST_TARGET_AVX512 void DotBlock(const DotProduct& p, int64_t row, int64_t column, int64_t k0, int64_t k1) {
  const float* a[kDotRows];
  const float* b[kDotRows];
#pragma GCC unroll 4
  for (int i = 0; i < kDotRows; ++i) {
    a[i] = p.a + std::min(row + i, p.m - 1) * p.k;  // rows past the end repeat the last; not stored
    b[i] = p.b + std::min(column + i, p.n - 1) * p.k;
  }
  __m512 sums[kDotRows][kDotRows];
#pragma GCC unroll 16
  for (int i = 0; i < kDotRows; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < kDotRows; ++j) sums[i][j] = _mm512_setzero_ps();
  for (int64_t k = k0; k < k1; k += 16) {
    const __mmask16 mask = detail::FirstLanes16(k1 - k);
    __m512 bv[kDotRows];
#pragma GCC unroll 4
    for (int j = 0; j < kDotRows; ++j) bv[j] = _mm512_maskz_loadu_ps(mask, b[j] + k);
#pragma GCC unroll 4
    for (int i = 0; i < kDotRows; ++i) {
      const __m512 av = _mm512_maskz_loadu_ps(mask, a[i] + k);
#pragma GCC unroll 4
      for (int j = 0; j < kDotRows; ++j) sums[i][j] = _mm512_fmadd_ps(av, bv[j], sums[i][j]);
    }
  }
  const int64_t rows = std::min<int64_t>(kDotRows, p.m - row), columns = std::min<int64_t>(kDotRows, p.n - column);
#pragma GCC unroll 4
  for (int i = 0; i < kDotRows; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < kDotRows; ++j) {
      if (i >= rows || j >= columns) continue;
      const float sum = _mm512_reduce_add_ps(sums[i][j]);
      float& out = p.c[(row + i) * p.n + column + j];
      out = k0 == 0 ? sum : out + sum;
    }
  }
}

// Row blocks [begin, end) of C: chunk by chunk of K, every column block each.
EST_TARGET_AVX512 void DotRows(const DotProduct& p, int64_t begin, int64_t end) {
  for (int64_t k0 = 0; k0 < p.k; k0 += kDotChunk) {
    const int64_t k1 = std::min(p.k, k0 + kDotChunk);
    for (int64_t block = begin; block < end; ++block)
      for (int64_t column = 0; column < p.n; column += kDotRows) DotBlock(p, block * kDotRows, column, k0, k1);
  }
}
EST_END_AVX512_KERNELS

// A's rows in blocks of kRows, each block [K][kRows] with zeros past M.
std::vector<float> PackRows(const Product& p) {
  const int64_t blocks = (p.m + kRows - 1) / kRows;
  std::vector<float> panels(static_cast<size_t>(blocks * p.k * kRows), 0.f);
  for (int64_t row = 0; row < p.m; ++row) {
    float* panel = panels.data() + (row / kRows) * p.k * kRows + row % kRows;
    const float* a = p.a + row * p.a_row_stride;
    for (int64_t k = 0; k < p.k; ++k) panel[k * kRows] = a[k * p.a_column_stride];
  }
  return panels;
}

// C = A · Bᵀ, blocks of rows spread over LibTorch's threads.
void MultiplyTransposed(const DotProduct& p) {
  const int64_t blocks = (p.m + kDotRows - 1) / kDotRows;
  const int64_t grain = detail::ParallelGrain(kDotRows * p.n * p.k, 262144);
  at::parallel_for(0, blocks, grain, [&](int64_t begin, int64_t end) { DotRows(p, begin, end); });
}

// C = A · B, strips of columns spread over LibTorch's threads.
void Multiply(const Product& p) {
  const std::vector<float> panels = PackRows(p);
  const int64_t strips = (p.n + kColumns - 1) / kColumns;
  const int64_t grain = detail::ParallelGrain(p.m * p.k * kColumns, 262144);
  at::parallel_for(0, strips, grain, [&](int64_t begin, int64_t end) { MultiplyStrips(p, panels, begin, end); });
}
#endif

// Our kernels run a layer's products where its weight holds at most this many values (8 MiB
// of float32). Larger weights stream from memory once per block of rows of the product, and
// BLAS, which packs them once, is faster: at one thread, forward and backward of 1024 → 1024
// and 2048 → 512 (batch 64) took 0.88–0.89 of OpenBLAS's time held to AVX2, 1024 → 4096 and
// 4096 → 4096 took 1.22 and 1.16 of it.
constexpr int64_t kOwnKernelsMaxWeight = int64_t{1} << 21;

// Which products a layer of [N, K] weights runs: ours, or LibTorch's (BLAS) as linear's
// autograd formulas call them, so that results are linear's own bits.
bool UsesOwnKernels(const at::Tensor& weight) {
  return detail::UsableVectorBits() >= 512 && weight.numel() <= kOwnKernelsMaxWeight;
}

// Y = X·Wᵀ + b.
at::Tensor ForwardProduct(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias, bool own) {
  if (!own) return bias.numel() > 0 ? at::addmm(bias, input, weight.t()) : at::mm(input, weight.t());
  auto output = at::empty({input.size(0), weight.size(0)}, input.options());
#if defined(__x86_64__)
  MultiplyTransposed({input.data_ptr<float>(), weight.data_ptr<float>(), output.data_ptr<float>(), input.size(0),
                      weight.size(0), input.size(1)});
#endif
  if (bias.numel() > 0) output.add_(bias);
  return output;
}

// dX[M, K] = dY[M, N] · W[N, K].
at::Tensor InputGradient(const at::Tensor& grad, const at::Tensor& weight, bool own) {
  if (!own) return at::mm(grad, weight);
  const int64_t m = grad.size(0), n = grad.size(1), k = weight.size(1);
  auto grad_input = at::empty({m, k}, weight.options());
#if defined(__x86_64__)
  Multiply({grad.data_ptr<float>(), n, 1, weight.data_ptr<float>(), k, grad_input.data_ptr<float>(), k, m, k, n});
#endif
  return grad_input;
}

// dW[N, K] = dYᵀ[N, M] · X[M, K].
at::Tensor WeightGradient(const at::Tensor& grad, const at::Tensor& input, bool own) {
  if (!own) return at::mm(grad.t(), input);
  const int64_t m = grad.size(0), n = grad.size(1), k = input.size(1);
  auto grad_weight = at::empty({n, k}, input.options());
#if defined(__x86_64__)
  Multiply({grad.data_ptr<float>(), 1, n, input.data_ptr<float>(), k, grad_weight.data_ptr<float>(), k, n, k, m});
#endif
  return grad_weight;
}

void RefuseSecondOrder() {
  TORCH_CHECK(!at::GradMode::is_enabled(), "est::kernels::Linear's gradient cannot be differentiated again");
}

// A dense layer is two autograd nodes, so that its weight's gradient is ready before its
// input's is computed. InputPart computes Y from the input and a detached weight and bias;
// its backward gives dX only. WeightPart comes after it and hands Y on (marked dirty, so Y's
// history moves onto it without a copy or a view); its backward gives dW and db and passes dY
// on to InputPart. The engine runs the weight's AccumulateGrad (and any hook on it, such as a
// gradient all-reduce's) as soon as WeightPart returns, before dX's product.
struct InputPart : torch::autograd::Function<InputPart> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            const at::Tensor& bias, bool own) {
    ctx->save_for_backward({weight});
    ctx->saved_data["own"] = own;
    return ForwardProduct(input, weight, bias, own);
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    RefuseSecondOrder();
    at::Tensor grad_input;
    if (ctx->needs_input_grad(0))
      grad_input = InputGradient(grads[0].contiguous(), ctx->get_saved_variables()[0], ctx->saved_data["own"].toBool());
    return {grad_input, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

struct WeightPart : torch::autograd::Function<WeightPart> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& output, const at::Tensor& weight,
                            const at::Tensor& bias, const at::Tensor& input, bool own) {
    ctx->save_for_backward({input});
    ctx->saved_data["own"] = own;
    ctx->saved_data["has_bias"] = bias.numel() > 0;
    ctx->mark_dirty({output});
    return output;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    RefuseSecondOrder();
    const at::Tensor grad = grads[0].contiguous();
    at::Tensor grad_weight, grad_bias;
    if (ctx->needs_input_grad(1))
      grad_weight = WeightGradient(grad, ctx->get_saved_variables()[0], ctx->saved_data["own"].toBool());
    if (ctx->saved_data["has_bias"].toBool() && ctx->needs_input_grad(2)) grad_bias = grad.sum(0);
    return {grad, grad_weight, grad_bias, at::Tensor(), at::Tensor()};
  }
};

bool HasOwnPath(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias) {
  // Under CPU autocast LibTorch runs this op in bfloat16; so do we, by running LibTorch's.
  if (detail::CpuAutocastEnabled() || detail::InJitTrace()) return false;
  using detail::IsContiguousFloatCpu;
  if (!IsContiguousFloatCpu(input) || !IsContiguousFloatCpu(weight)) return false;
  if (input.dim() != 2 || weight.dim() != 2 || input.size(1) != weight.size(1)) return false;
  if (input.numel() == 0 || weight.numel() == 0) return false;
  return detail::IsAbsentOrFloatBias(bias, weight.size(0));
}

}  // namespace

at::Tensor Linear(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias) {
  if (!HasOwnPath(input, weight, bias)) return torch::linear(input, weight, bias);
  const bool own = UsesOwnKernels(weight);
  const at::Tensor some_bias = detail::BiasOrEmpty(bias, weight);
  at::Tensor output = InputPart::apply(input, weight.detach(), some_bias.detach(), own);
  return WeightPart::apply(output, weight, some_bias, input.detach(), own);
}

}  // namespace est::kernels
