#pragma once
// The plane kernels of MaxPool2dWithIndices, for the other max-pool kernels of est::kernels and
// their tests. Internal to the kernels.

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include <cstdint>
#include <optional>

namespace est::kernels::detail {

/// One pooling of [planes, height, width] into [planes, out_height, out_width]: LibTorch's
/// arguments with their defaults filled in.
struct PoolGeometry {
  int64_t planes = 0, height = 0, width = 0, out_height = 0, out_width = 0;
  int64_t kernel_h = 0, kernel_w = 0, stride_h = 0, stride_w = 0;
  int64_t pad_h = 0, pad_w = 0, dilation_h = 0, dilation_w = 0;
};

/// The geometry of max-pooling a tensor of `sizes` ([..., height, width]) with LibTorch's
/// arguments, or nullopt where these kernels leave it to LibTorch (an argument LibTorch refuses,
/// a window that reads no input, sizes past 32-bit positions).
std::optional<PoolGeometry> PoolGeometryOf(at::IntArrayRef sizes, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                           at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode);

/// What a plane kernel writes beside the maxima: nothing, each window's winner as LibTorch's
/// flat index in the plane (int64), or as a code of one byte (uint8): the winner's position in
/// the window, kernel row by kernel column, plus kWinnerFlows where the maximum is > 0 or NaN
/// (where relu's backward lets the gradient through).
enum class PoolWinners { kNone, kIndices, kCodes };

/// The flag of a winner's code; the position in the window takes the bits below it, so codes
/// serve windows of up to kWinnerFlows positions.
constexpr int kWinnerFlows = 128;

/// Pools one plane: the maxima into `out` and the winners into `indices` or `codes`, whichever
/// the kernel writes (the other is not read).
using PoolPlane = void (*)(const float* in, float* out, int64_t* indices, uint8_t* codes, const PoolGeometry& g);

/// A pooling these kernels compute on this CPU: its geometry and its plane kernels
/// (`with_codes` null where a window has more positions than a code holds).
struct MaxPool2dPlan {
  PoolGeometry geometry;
  PoolPlane values_only = nullptr, with_indices = nullptr, with_codes = nullptr;
};

/// The plan for this pooling, or nullopt where these kernels leave it to LibTorch's (another
/// dtype, device or layout, an argument LibTorch refuses, a window that reads no input, a CPU
/// without AVX2, or vectors capped by AllowVectorBits).
std::optional<MaxPool2dPlan> PlanMaxPool2d(const at::Tensor& input, at::IntArrayRef kernel_size,
                                           at::IntArrayRef stride, at::IntArrayRef padding,
                                           at::IntArrayRef dilation, bool ceil_mode);

/// Whether MaxPool2dWithIndices computes this pooling with its own kernels on this CPU.
inline bool MaxPool2dIsOurs(const at::Tensor& input, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                            at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode) {
  return PlanMaxPool2d(input, kernel_size, stride, padding, dilation, ceil_mode).has_value();
}

/// An uninitialized tensor of `dtype` with `input`'s sizes but the pooled height and width.
at::Tensor EmptyPooled(const at::Tensor& input, const PoolGeometry& g, at::ScalarType dtype);

/// Pools every plane of `in` (contiguous, as planned) into `out` and `winners` into
/// `winners_out` (int64_t or uint8_t, as many as `out` has values; unused for kNone), planes
/// spread over LibTorch's intra-op threads.
void PoolPlanes(const MaxPool2dPlan& plan, PoolWinners winners, const float* in, float* out, void* winners_out);

/// The input gradient of a pooling from its winners' codes (PoolWinners::kCodes) and the
/// output's gradient, plane by plane, as LibTorch's max_pool2d_with_indices_backward gives it
/// to the bit; with `relu`, followed by relu's backward (threshold_backward at 0 on the pooled
/// input), in the same pass. Windows that do not overlap are written a row at a time with
/// vectors, with no zero fill first; others are summed window by window.
void PoolBackwardPlanes(const PoolGeometry& g, const uint8_t* codes, const float* grad_output, float* grad_input,
                        bool relu);

}  // namespace est::kernels::detail
