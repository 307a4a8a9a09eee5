#pragma once
/// Channels-last memory format (NHWC, torch::MemoryFormat::ChannelsLast) for a replica's
/// 4-D parameters and the 4-D floating tensors of its batches: the layout TensorFlow's
/// convolutions use and cuDNN's fastest kernels want. It changes where the values lie in
/// memory, not what they are: checkpoints hold the same tensors either way.

#include <c10/core/Device.h>

#include <string>

namespace at {
class Tensor;
}

namespace est {

/// When replicas use channels-last.
enum class ChannelsLast {
  kAuto,  ///< on for CUDA replicas (cuDNN's NHWC kernels), off on the CPU (docs/performance.md)
  kOn,    ///< on for every replica
  kOff,   ///< never: LibTorch's default, contiguous (NCHW) tensors
};

/// "auto", "on" or "off".
const char* ChannelsLastName(ChannelsLast policy);
/// The ChannelsLast named "auto", "on" or "off"; ConfigError listing the names otherwise.
ChannelsLast ParseChannelsLast(const std::string& name);
/// Whether a replica on `device` uses channels-last under `policy`.
bool UsesChannelsLast(ChannelsLast policy, c10::Device device);

/// Whether `tensor` is one that channels-last lays out anew: a 4-D floating tensor.
bool TakesChannelsLast(const at::Tensor& tensor);

}  // namespace est
