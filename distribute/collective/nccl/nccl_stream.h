#pragma once
/// NcclStream: the NCCL collective's own CUDA stream on one device, ordered against torch's
/// current stream with CUDA events.

#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>

#include <chrono>
#include <vector>

namespace est::distribute {

/// A stream from c10's pool for the work of one NCCL communicator. Each operation is
/// bracketed: follow_current() before issuing it, join_current() after, then wait_until().
/// One thread at a time.
class NcclStream {
 public:
  /// A stream of CUDA device `device` (which must exist).
  explicit NcclStream(c10::DeviceIndex device);

  /// The stream, for NCCL calls.
  cudaStream_t get() const { return stream_.stream(); }
  /// Makes this stream wait for the work issued so far on torch's current stream of the
  /// device (what produced the operation's input).
  void follow_current();
  /// After work that uses `tensors` was issued on this stream: tells the caching allocator
  /// that their memory is in use by this stream (so that it is not handed out again before
  /// the work completes), and makes torch's current stream wait for the work.
  void join_current(const std::vector<at::Tensor>& tensors);
  /// Polls until the work issued on this stream before the last join_current() has
  /// completed: true then, false once `deadline` passes first.
  bool wait_until(std::chrono::steady_clock::time_point deadline) const;

 private:
  c10::cuda::CUDAStream stream_;
  at::cuda::CUDAEvent input_ready_;  ///< recorded on the current stream by follow_current()
  at::cuda::CUDAEvent done_;         ///< recorded on this stream by join_current()
};

}  // namespace est::distribute
