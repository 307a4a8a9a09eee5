#include "estimator/async_host_copy.h"

#include <ATen/ATen.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <thread>

namespace est {

at::Tensor AsyncHostCopy::start(const at::Tensor& tensor) {
  if (!tensor.defined() || !tensor.is_cuda()) return tensor;
  at::Tensor host = at::empty(tensor.sizes(), tensor.options().device(at::kCPU).pinned_memory(true));
  host.copy_(tensor.detach(), /*non_blocking=*/true);
  const c10::Stream current = c10::impl::VirtualGuardImpl(tensor.device().type()).getStream(tensor.device());
  if (!copied_ || copied_->device() != current.device()) copied_.emplace(current.device_type());
  copied_->record(current);
  pending_ = true;
  return host;
}

void AsyncHostCopy::wait() {
  if (!pending_) return;
  // LibTorch 1.13's c10::Event has no synchronize(); the copy follows one forward pass.
  while (!copied_->query()) std::this_thread::yield();
  pending_ = false;
}

}  // namespace est
