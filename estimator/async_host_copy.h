#pragma once
/// AsyncHostCopy: brings a step's loss from a GPU to the host without waiting for the work
/// queued after it. Internal to the estimator.

#include <ATen/core/Tensor.h>
#include <c10/core/Event.h>

#include <optional>

namespace est {

/// Copies a device tensor into pinned host memory with a copy queued on the device's
/// current stream right where the value is computed (after forward, before backward), so
/// that wait() returns once the forward is done while backward and the optimizer still
/// run: reading the loss every step (NanTensorHook) does not stall the GPU's queue as
/// `.item()` on the device tensor would. Host tensors pass through untouched.
class AsyncHostCopy {
 public:
  /// Starts copying `tensor` to the host; returns the host tensor, whose value is valid
  /// after wait().
  at::Tensor start(const at::Tensor& tensor);
  /// Returns once the copies started so far have landed.
  void wait();

 private:
  std::optional<c10::Event> copied_;
  bool pending_ = false;
};

}  // namespace est
