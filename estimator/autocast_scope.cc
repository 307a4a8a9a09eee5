#include "estimator/autocast_scope.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include "common/error.h"

namespace est {
namespace {

// LibTorch 2.4 keys autocast's state by device type; earlier versions have a function per type.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool IsEnabled(c10::DeviceType type) { return at::autocast::is_autocast_enabled(type); }
void SetEnabled(c10::DeviceType type, bool enabled) { at::autocast::set_autocast_enabled(type, enabled); }
c10::ScalarType Dtype(c10::DeviceType type) { return at::autocast::get_autocast_dtype(type); }
void SetDtype(c10::DeviceType type, c10::ScalarType dtype) { at::autocast::set_autocast_dtype(type, dtype); }
#else
bool IsEnabled(c10::DeviceType type) {
  return type == c10::DeviceType::CUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
}
void SetEnabled(c10::DeviceType type, bool enabled) {
  if (type == c10::DeviceType::CUDA) {
    at::autocast::set_enabled(enabled);
  } else {
    at::autocast::set_cpu_enabled(enabled);
  }
}
c10::ScalarType Dtype(c10::DeviceType type) {
  return type == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
}
void SetDtype(c10::DeviceType type, c10::ScalarType dtype) {
  if (type == c10::DeviceType::CUDA) {
    at::autocast::set_autocast_gpu_dtype(dtype);
  } else {
    at::autocast::set_autocast_cpu_dtype(dtype);
  }
}
#endif

}  // namespace

bool AutocastEnabled(c10::DeviceType type) { return IsEnabled(type); }

AutocastScope::AutocastScope(MixedPrecision precision, c10::Device device) : device_type_(device.type()) {
  if (precision == MixedPrecision::kNone) return;
  EST_CHECK(device_type_ == c10::DeviceType::CPU || device_type_ == c10::DeviceType::CUDA, ConfigError,
            "mixed precision ", MixedPrecisionName(precision), " needs CPU or CUDA devices; the replica is on ",
            device.str());
  EST_CHECK(!(precision == MixedPrecision::kFloat16 && device_type_ == c10::DeviceType::CPU), ConfigError,
            "mixed precision float16 needs CUDA devices, but the replica is on ", device.str(),
            "; on the CPU use bfloat16");
  previous_enabled_ = IsEnabled(device_type_);
  previous_dtype_ = Dtype(device_type_);
  SetEnabled(device_type_, true);
  SetDtype(device_type_, precision == MixedPrecision::kFloat16 ? c10::ScalarType::Half : c10::ScalarType::BFloat16);
  at::autocast::increment_nesting();
  active_ = true;
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  // Casts of the variables are cached while a scope is open; the outermost one drops them.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  SetEnabled(device_type_, previous_enabled_);
  SetDtype(device_type_, previous_dtype_);
}

}  // namespace est
