#include "kernels/cpu_vectors.h"

#include <ATen/autocast_mode.h>
#include <ATen/ops/empty.h>
#include <torch/csrc/jit/frontend/tracer.h>
#include <torch/version.h>

#include <algorithm>
#include <atomic>

namespace est::kernels::detail {
namespace {

std::atomic<int> allowed_vector_bits{512};

int DetectVectorBits() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    return 512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 256;
#endif
  return 0;
}

}  // namespace

int CpuVectorBits() {
  static const int cpu = DetectVectorBits();
  return cpu;
}

int UsableVectorBits() { return std::min(CpuVectorBits(), allowed_vector_bits.load(std::memory_order_relaxed)); }

void AllowVectorBits(int bits) { allowed_vector_bits.store(bits, std::memory_order_relaxed); }

bool InJitTrace() { return torch::jit::tracer::isTracing(); }

bool CpuAutocastEnabled() {
// LibTorch 2.4 keys autocast's state by device type; earlier versions have a function per type.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  return at::autocast::is_autocast_enabled(c10::DeviceType::CPU);
#else
  return at::autocast::is_cpu_enabled();
#endif
}

at::Tensor BiasOrEmpty(const at::Tensor& bias, const at::Tensor& weight) {
  return bias.defined() ? bias : at::empty({0}, weight.options());
}

}  // namespace est::kernels::detail
