#pragma once
/// Helpers of the NCCL core's tests: how many CUDA devices there are, the skip of [cuda]
/// tests that need more, and device buffers filled from host values.

#include <c10/core/Device.h>
#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "distribute/collective/nccl/nccl_status.h"
#include "distribute/collective/nccl/nccl_types.h"
#include "tests/cuda_devices.h"

namespace est::testing {

using distribute::CudaErrorText;
using distribute::NcclDataType;
using distribute::NcclElementSize;

/// The number of CUDA devices, 0 when the runtime finds none (or no driver).
inline int CudaDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

/// CUDA device `index`, as LibTorch names it.
inline c10::Device Gpu(int index) { return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index)); }

/// Ends a [cuda] test, with a message, when fewer than `n` CUDA devices are present.
#define EST_REQUIRE_CUDA_DEVICES(n) EST_SKIP_UNLESS_CUDA_DEVICES(::est::testing::CudaDeviceCount(), n)

/// Throws std::runtime_error unless a CUDA call succeeded (usable on ranks' threads, unlike
/// Catch's assertions).
inline void CudaCheck(cudaError_t error, const char* what) {
  if (error != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + CudaErrorText(error));
}

/// float32 `value` as bfloat16 bits (truncated: exact for the small integers of the tests).
inline uint16_t ToBFloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return static_cast<uint16_t>(bits >> 16);
}

/// A non-negative integer up to 2048 as float16 bits (exact).
inline uint16_t ToFloat16(int value) {
  if (value == 0) return 0;
  int exponent = 0;
  while ((value >> (exponent + 1)) != 0) ++exponent;
  int mantissa = (value << (10 - exponent)) & 0x3ff;
  return static_cast<uint16_t>((exponent + 15) << 10 | mantissa);
}

/// The host bytes of `values` (small non-negative integers) as elements of `type`.
inline std::vector<char> HostBytes(const std::vector<int>& values, NcclDataType type) {
  std::vector<char> bytes(values.size() * NcclElementSize(type));
  for (size_t i = 0; i < values.size(); ++i) {
    char* out = bytes.data() + i * NcclElementSize(type);
    auto put = [&](auto element) { std::memcpy(out, &element, sizeof(element)); };
    switch (type) {
      case NcclDataType::kFloat32: put(static_cast<float>(values[i])); break;
      case NcclDataType::kFloat64: put(static_cast<double>(values[i])); break;
      case NcclDataType::kFloat16: put(ToFloat16(values[i])); break;
      case NcclDataType::kBFloat16: put(ToBFloat16(static_cast<float>(values[i]))); break;
      case NcclDataType::kInt32: put(static_cast<int32_t>(values[i])); break;
      case NcclDataType::kInt64: put(static_cast<int64_t>(values[i])); break;
      case NcclDataType::kUInt8: put(static_cast<uint8_t>(values[i])); break;
    }
  }
  return bytes;
}

/// Device memory of `bytes` bytes on the current device, freed at the end of the scope.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) { CudaCheck(cudaMalloc(&data_, bytes == 0 ? 1 : bytes), "cudaMalloc"); }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return data_; }

 private:
  void* data_ = nullptr;
};

}  // namespace est::testing
