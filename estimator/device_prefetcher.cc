#include "estimator/device_prefetcher.h"

#include <ATen/ATen.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include "common/error.h"
#include "estimator/estimator_impl.h"

namespace est {
namespace {

c10::Stream CurrentStream(c10::Device device) { return c10::impl::VirtualGuardImpl(device.type()).getStream(device); }

}  // namespace

DevicePrefetcher::DevicePrefetcher(std::vector<c10::Device> devices, ChannelsLast channels_last) {
  EST_ASSERT(!devices.empty(), "a prefetcher needs the replicas' devices");
  for (const c10::Device& device : devices) {
    DeviceCopies copies{device, UsesChannelsLast(channels_last, device), std::nullopt, std::nullopt, false};
    if (device.is_cuda()) {
      const c10::impl::VirtualGuardImpl guard(device.type());
      copies.copy_stream = guard.getStreamFromGlobalPool(device);
    }
    devices_.push_back(std::move(copies));
  }
}

void DevicePrefetcher::start(std::vector<data::Element>& batches) {
  for (size_t i = 0; i < batches.size(); ++i) {
    DeviceCopies& copies = devices_[i % devices_.size()];
    if (!copies.copy_stream) {
      if (copies.channels_last) batches[i] = ToDevice(std::move(batches[i]), copies.device, true);
      continue;
    }
    const c10::StreamGuard on_copy_stream(*copies.copy_stream);
    batches[i] = ToDevice(std::move(batches[i]), copies.device, copies.channels_last);
  }
  for (DeviceCopies& copies : devices_) {
    if (!copies.copy_stream) continue;
    if (!copies.copied) copies.copied.emplace(copies.device.type());
    copies.copied->record(*copies.copy_stream);
    copies.pending = true;
  }
}

void DevicePrefetcher::wait(const std::vector<data::Element>& batches) {
  for (size_t i = 0; i < batches.size(); ++i) {
    const DeviceCopies& copies = devices_[i % devices_.size()];
    if (!copies.pending) continue;
    const c10::Stream current = CurrentStream(copies.device);
    // Memory allocated on the copy stream is used on the current one from here on.
    auto used_on_current = [&](const at::Tensor& tensor) {
      if (tensor.defined() && tensor.device() == copies.device) tensor.record_stream(current);
    };
    for (const auto& [name, tensor] : batches[i].features) used_on_current(tensor);
    used_on_current(batches[i].labels);
  }
  for (DeviceCopies& copies : devices_) {
    if (!copies.pending) continue;
    copies.copied->block(CurrentStream(copies.device));
    copies.pending = false;
  }
}

}  // namespace est
