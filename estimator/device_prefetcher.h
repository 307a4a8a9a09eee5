#pragma once
/// DevicePrefetcher: starts copying the next step's batches onto the replicas' devices
/// while the current step computes. Internal to the estimator.

#include <c10/core/Device.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>

#include <optional>
#include <vector>

#include "data/element.h"
#include "estimator/channels_last.h"

namespace est {

/// Moves a step's batches (batch i belongs to replica i % replicas) onto their replicas'
/// devices. For a CUDA device each host tensor is pinned and copied without blocking on a
/// copy stream of that device, so the copy runs while earlier steps compute; wait() then
/// orders the device's current stream after the copies and keeps the copied memory from
/// being reused before that stream is done with it; a replica that uses channels-last gets its
/// batch's 4-D floating tensors laid out so there (on the copy stream for a CUDA device, at
/// once on the CPU). Other batches of CPU replicas are left as they are. One step in flight:
/// call wait() on a step's batches before start() on the next.
class DevicePrefetcher {
 public:
  /// `devices`: one per local replica; each uses channels-last as `channels_last` says for it.
  DevicePrefetcher(std::vector<c10::Device> devices, ChannelsLast channels_last);

  /// Starts moving `batches` onto their devices, in place.
  void start(std::vector<data::Element>& batches);
  /// Makes each device's current stream wait for the copies of the last start(), which
  /// were of `batches`.
  void wait(const std::vector<data::Element>& batches);

 private:
  struct DeviceCopies {
    c10::Device device;
    bool channels_last;
    std::optional<c10::Stream> copy_stream;  ///< CUDA devices only
    std::optional<c10::Event> copied;        ///< recorded after each start()'s copies
    bool pending = false;                    ///< copies started that no wait() has ordered yet
  };

  std::vector<DeviceCopies> devices_;
};

}  // namespace est
