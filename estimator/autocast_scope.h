#pragma once
/// AutocastScope: LibTorch's autocast switched on for one device type while alive (the
/// C++ form of `with torch.autocast(device_type, dtype)`). Internal to the estimator.

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "estimator/mixed_precision.h"

namespace est {

/// Whether autocast is on for tensors of `type` on this thread (kernels of our own that
/// autocast does not know defer to LibTorch's ops then).
bool AutocastEnabled(c10::DeviceType type);

/// While alive, ops on tensors of `device`'s type that autocast lists run in
/// `precision`'s dtype on this thread; the previous autocast state comes back at the end,
/// so scopes nest. kNone changes nothing. Throws ConfigError for float16 on a CPU device
/// (LibTorch's CPU autocast computes in bfloat16) and for device types other than CPU and
/// CUDA.
class AutocastScope {
 public:
  AutocastScope(MixedPrecision precision, c10::Device device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  c10::DeviceType device_type_ = c10::DeviceType::CPU;
  bool previous_enabled_ = false;
  c10::ScalarType previous_dtype_ = c10::ScalarType::Undefined;
};

}  // namespace est
