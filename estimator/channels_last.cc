#include "estimator/channels_last.h"

#include <ATen/core/Tensor.h>

#include "common/error.h"

namespace est {

const char* ChannelsLastName(ChannelsLast policy) {
  switch (policy) {
    case ChannelsLast::kAuto:
      return "auto";
    case ChannelsLast::kOn:
      return "on";
    case ChannelsLast::kOff:
      return "off";
  }
  return "unknown";
}

ChannelsLast ParseChannelsLast(const std::string& name) {
  if (name == "auto") return ChannelsLast::kAuto;
  if (name == "on") return ChannelsLast::kOn;
  if (name == "off") return ChannelsLast::kOff;
  EST_THROW(ConfigError, "unknown channels-last setting '", name, "'; expected auto, on or off");
}

bool UsesChannelsLast(ChannelsLast policy, c10::Device device) {
  return policy == ChannelsLast::kOn || (policy == ChannelsLast::kAuto && device.is_cuda());
}

bool TakesChannelsLast(const at::Tensor& tensor) {
  return tensor.defined() && tensor.dim() == 4 && tensor.is_floating_point() && tensor.layout() == at::kStrided;
}

}  // namespace est
