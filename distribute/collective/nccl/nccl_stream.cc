#include "distribute/collective/nccl/nccl_stream.h"

#include <c10/cuda/CUDACachingAllocator.h>

#include <algorithm>
#include <thread>

namespace est::distribute {

NcclStream::NcclStream(c10::DeviceIndex device)
    : stream_(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device)) {}

void NcclStream::follow_current() {
  input_ready_.record(c10::cuda::getCurrentCUDAStream(stream_.device_index()));
  input_ready_.block(stream_);
}

void NcclStream::join_current(const std::vector<at::Tensor>& tensors) {
  for (const at::Tensor& tensor : tensors) {
    if (tensor.defined() && tensor.is_cuda()) {
      c10::cuda::CUDACachingAllocator::recordStream(tensor.storage().data_ptr(), stream_);
    }
  }
  done_.record(stream_);
  done_.block(c10::cuda::getCurrentCUDAStream(stream_.device_index()));
}

bool NcclStream::wait_until(std::chrono::steady_clock::time_point deadline) const {
  // Short operations are seen within microseconds; long ones cost a wake-up every 200 us.
  auto pause = std::chrono::microseconds(2);
  while (!done_.query()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(200));
  }
  return true;
}

}  // namespace est::distribute
