#include "distribute/collective/nccl/nccl_status.h"

#include "common/error.h"

namespace est::distribute {

std::string NcclErrorText(ncclResult_t result) {
  std::string text = ncclGetErrorString(result);
  const char* last = ncclGetLastError(nullptr);
  if (last != nullptr && last[0] != '\0') text += std::string("; last NCCL error: ") + last;
  return text;
}

std::string CudaErrorText(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + " (" + cudaGetErrorString(error) + ")";
}

CudaDeviceGuard::CudaDeviceGuard(int device, const std::string& what) {
  cudaError_t error = cudaGetDevice(&previous_);
  if (error == cudaSuccess && previous_ != device) error = cudaSetDevice(device);
  if (error != cudaSuccess) {
    previous_ = -1;
    EST_THROW(CommunicationError, what, ": cannot make CUDA device ", device, " current: ", CudaErrorText(error));
  }
}

CudaDeviceGuard::~CudaDeviceGuard() {
  int current = -1;
  if (previous_ >= 0 && cudaGetDevice(&current) == cudaSuccess && current != previous_) cudaSetDevice(previous_);
}

}  // namespace est::distribute
