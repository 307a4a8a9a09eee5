#pragma once
/// Text of NCCL and CUDA errors for messages, and a guard that makes a CUDA device current.

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

namespace est::distribute {

/// "ncclSystemError (unhandled system error ...); last NCCL error: <ncclGetLastError>", the
/// last part only when NCCL recorded one.
std::string NcclErrorText(ncclResult_t result);

/// "cudaErrorNoDevice (no CUDA-capable device is detected)".
std::string CudaErrorText(cudaError_t error);

/// Makes `device` the calling thread's current CUDA device, and the previous one current
/// again at the end of the scope. Throws CommunicationError naming `what` when it cannot.
class CudaDeviceGuard {
 public:
  CudaDeviceGuard(int device, const std::string& what);
  ~CudaDeviceGuard();
  CudaDeviceGuard(const CudaDeviceGuard&) = delete;
  CudaDeviceGuard& operator=(const CudaDeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace est::distribute
