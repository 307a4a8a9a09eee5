#pragma once
// A model whose predictions take more of the ONNX export's mappings than ServedRegression's, for
// onnx_export_test.cc and onnx_fixture.cc (whose exports onnx_runtime_test.py runs).

#include <torch/torch.h>

#include "tests/serving/serving_models.h"

namespace est::testing {

/// ServedRegression, predicting also "mixed" (float32 [-1, 3]) through a layer norm, a where, an
/// unsqueeze and flatten, transposes, gelu, softmax, a narrow, a sum and a sigmoid; "largest_at"
/// (int64 [-1, 1]) by max along a dimension; "running" (float32 [-1, 4]) through cat, cumsum,
/// tensors of a request's size (full_like, ones_like), index_select, a mean over the batch and clamp.
inline EstimatorSpec ServedMoreOps(const Features& features, const at::Tensor& labels, Mode mode, ModelContext& ctx) {
  EstimatorSpec spec = ServedRegression(features, labels, mode, ctx);
  if (mode != Mode::kPredict) return spec;
  const at::Tensor x = features.at("x");
  const at::Tensor normed = torch::layer_norm(x, {3}) * 2 + 1;
  const at::Tensor mixed = torch::where(x > 0, normed, x.tanh()).unsqueeze(2).flatten(1).transpose(0, 1).t();
  spec.predictions["mixed"] = torch::gelu(mixed).softmax(1) + x.narrow(1, 0, 2).sum(1, true).sigmoid();
  auto [top, where] = x.max(1, /*keepdim=*/true);
  spec.predictions["largest_at"] = where;
  spec.predictions["running"] = torch::cat({x, top}, 1).cumsum(1) * torch::full_like(top, 0.5) + torch::ones_like(x)
                                    .index_select(1, torch::tensor({0, 0, 1, 2})).mean(0, true).clamp(0, 1);
  return spec;
}

}  // namespace est::testing
