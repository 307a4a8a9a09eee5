#pragma once
// Relu and max-pooling of a convolution's output kept in oneDNN's channel-blocked layout
// (nChw8c, nChw16c), forward and backward: the inner loops of ConvReluMaxPool2d. Internal to
// the kernels and their tests.

#include <cstdint>

#include "kernels/max_pool2d_internal.h"

namespace est::kernels::detail {

/// A convolution's output [batch, channels, height, width] laid out channel-blocked:
/// [batch][ceil(channels / block)][height][width][block], the last block padded.
struct BlockedShape {
  int64_t batch = 0, channels = 0;
  int block = 0;  ///< 8 or 16
  int64_t blocks() const { return (channels + block - 1) / block; }
};

/// Whether the blocked kernels take windows of this geometry: each window's winner is kept as
/// one byte (its position in the window, plus kWinnerFlows where relu lets its gradient
/// through), and the lanes of a block are 32-bit offsets apart in the pooled output.
inline bool BlockedPoolFits(const PoolGeometry& g) {
  return g.kernel_h * g.kernel_w <= kWinnerFlows && g.out_height * g.out_width * 16 < (int64_t{1} << 31);
}

/// `max_pool2d(relu(y))` of the blocked `y` (geometry `g`, its height and width y's): the pooled
/// values into `pooled`, contiguous NCHW [batch, channels, out_height, out_width], equal to
/// LibTorch's to the bit (relu keeps -0 and NaN as clamp_min does; a window's first maximum, or
/// its last NaN, wins); each winner's code (its position in the window, plus kWinnerFlows where
/// it is > 0 or NaN) into `codes`, blocked [batch][blocks][out_height][out_width][block].
void ReluMaxPoolBlocked(const float* y, const BlockedShape& shape, const PoolGeometry& g, float* pooled,
                        uint8_t* codes);

/// The gradient of relu's input, blocked as y, from the pooled values' gradient (contiguous
/// NCHW) and the forward's codes, as LibTorch's max_pool2d backward then relu's backward give
/// it, to the bit: each window's gradient added to its winner in window order, where flagged.
void ReluMaxPoolBlockedBackward(const float* grad_pooled, const uint8_t* codes, const BlockedShape& shape,
                                const PoolGeometry& g, float* grad_y);

}  // namespace est::kernels::detail
