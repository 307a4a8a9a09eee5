#pragma once
// What the tests of the max-pool kernels share: random poolings, values with ties and NaNs, and
// comparisons to the bit.

#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <ostream>
#include <random>
#include <vector>

namespace est_test {

/// One max-pool call's arguments.
struct Pooling {
  std::vector<int64_t> shape, kernel, stride, padding, dilation;
  bool ceil_mode = false;
};

/// For CAPTURE.
inline std::ostream& operator<<(std::ostream& out, const Pooling& p) {
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

/// Values with many ties, zeros of both signs, infinities and some NaNs.
inline torch::Tensor Values(const std::vector<int64_t>& shape, uint64_t seed) {
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

/// The same shape and the same bits: NaNs of the same payload in the same places.
inline bool SameBits(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
  if (a.scalar_type() == torch::kFloat) return torch::equal(a.contiguous().view(torch::kInt), b.contiguous().view(torch::kInt));
  if (a.scalar_type() == torch::kDouble) return torch::equal(a.contiguous().view(torch::kLong), b.contiguous().view(torch::kLong));
  if (a.scalar_type() == torch::kBFloat16) return torch::equal(a.contiguous().view(torch::kShort), b.contiguous().view(torch::kShort));
  return torch::equal(a, b);
}

/// A pooling of random geometry: windows 1 to 5 wide, strides 1 to 4 (sometimes left to default
/// to the window), paddings up to half the window, dilations 1 to 3, planes 1 to 40 wide.
inline Pooling RandomPooling(std::mt19937& random) {
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

}  // namespace est_test
