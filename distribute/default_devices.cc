#include "distribute/default_devices.h"

#include <torch/cuda.h>

#include "common/error.h"

namespace est::distribute {

int CudaDeviceCount() { return static_cast<int>(torch::cuda::device_count()); }

std::vector<std::string> EveryLocalDevice(int cuda_devices) {
  if (cuda_devices <= 0) return {"cpu"};
  std::vector<std::string> devices;
  for (int index = 0; index < cuda_devices; ++index) devices.push_back("cuda:" + std::to_string(index));
  return devices;
}

std::string DeviceOfLocalRank(int local_rank, int cuda_devices) {
  EST_CHECK(local_rank >= 0, ConfigError, "local rank ", local_rank, " is negative");
  if (cuda_devices <= 0) return "cpu";
  EST_CHECK(local_rank < cuda_devices, ConfigError, "local rank ", local_rank, " has no GPU of its own: LibTorch sees ",
            cuda_devices, " CUDA device(s) on this host (cuda:0 to cuda:", cuda_devices - 1, "); start at most ",
            cuda_devices, " training tasks per host, or name each task's devices");
  return "cuda:" + std::to_string(local_rank);
}

}  // namespace est::distribute
