// DevicePrefetcher: batches of CPU replicas stay where they are; batches of CUDA replicas
// arrive on their devices with their values once waited for; images are laid out
// channels-last where the replica uses it.

#include <torch/torch.h>

#include "estimator/device_prefetcher.h"
#include "tests/torch_cuda_devices.h"

#include <catch2/catch.hpp>

using namespace est;

namespace {

// `count` batches, with values that differ from batch to batch and from step to step.
std::vector<data::Element> Batches(int count, int step = 0) {
  std::vector<data::Element> batches(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    const int k = i + 100 * step;
    batches[static_cast<size_t>(i)].features["x"] = torch::arange(6, torch::kFloat).reshape({2, 3}) + 10 * k;
    batches[static_cast<size_t>(i)].features["image"] = torch::arange(48, torch::kFloat).reshape({2, 3, 4, 2}) - k;
    batches[static_cast<size_t>(i)].labels = torch::tensor({k, k + 1}, torch::kLong);
  }
  return batches;
}

}  // namespace

TEST_CASE("DevicePrefetcher leaves the batches of CPU replicas untouched", "[estimator]") {
  const ChannelsLast policy = GENERATE(ChannelsLast::kAuto, ChannelsLast::kOff);
  DevicePrefetcher prefetcher({c10::Device("cpu"), c10::Device("cpu")}, policy);
  auto batches = Batches(4);
  const void* data = batches[3].features.at("x").data_ptr();
  const void* image = batches[3].features.at("image").data_ptr();
  prefetcher.start(batches);
  prefetcher.wait(batches);
  CHECK(batches[3].features.at("x").data_ptr() == data);
  CHECK(batches[3].features.at("image").data_ptr() == image);
  CHECK(batches[3].labels.device().is_cpu());
}

TEST_CASE("DevicePrefetcher lays out the images of channels-last CPU replicas channels-last", "[estimator]") {
  DevicePrefetcher prefetcher({c10::Device("cpu")}, ChannelsLast::kOn);
  auto batches = Batches(2);
  const auto expected = Batches(2);
  const void* data = batches[1].features.at("x").data_ptr();
  prefetcher.start(batches);
  prefetcher.wait(batches);
  for (size_t i = 0; i < batches.size(); ++i) {
    const auto& image = batches[i].features.at("image");
    CHECK(image.is_contiguous(at::MemoryFormat::ChannelsLast));
    CHECK_FALSE(image.is_contiguous());
    CHECK(torch::equal(image, expected[i].features.at("image")));  // the same values, laid out anew
  }
  CHECK(batches[1].features.at("x").data_ptr() == data);  // not 4-D: left as it is
}

TEST_CASE("DevicePrefetcher moves each replica's batches onto its CUDA device", "[estimator][cuda]") {
  EST_REQUIRE_TORCH_CUDA_DEVICES(1);
  const int gpus = std::min<int>(static_cast<int>(torch::cuda::device_count()), 2);
  std::vector<c10::Device> devices = {c10::Device("cpu")};
  for (int g = 0; g < gpus; ++g) devices.emplace_back(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(g));
  const int count = 2 * static_cast<int>(devices.size());
  // As the training loop holds them: swapped while the next step's copies run.
  auto current = Batches(count, 0);
  std::vector<data::Element> upcoming;
  DevicePrefetcher prefetcher(devices, ChannelsLast::kAuto);
  prefetcher.start(current);
  for (int step = 0; step < 4; ++step) {
    prefetcher.wait(current);
    upcoming = Batches(count, step + 1);
    prefetcher.start(upcoming);
    const auto expected = Batches(count, step);
    for (size_t i = 0; i < current.size(); ++i) {
      const c10::Device device = devices[i % devices.size()];
      CHECK(current[i].features.at("x").device() == device);
      CHECK(current[i].labels.device() == device);
      // Used on the device's current stream, after the wait: the copied values.
      CHECK(torch::equal((current[i].features.at("x") * 1).cpu(), expected[i].features.at("x")));
      CHECK(torch::equal((current[i].labels + 0).cpu(), expected[i].labels));
      // kAuto: channels-last on the GPUs, not on the CPU.
      const auto& image = current[i].features.at("image");
      CHECK(image.is_contiguous(at::MemoryFormat::ChannelsLast) == device.is_cuda());
      CHECK(torch::equal((image * 1).cpu(), expected[i].features.at("image")));
    }
    std::swap(current, upcoming);
  }
  // Destroyed with the last copies still queued (as when a step throws or a hook stops
  // training): their memory goes back to LibTorch's caching allocators, which reuse it only
  // after the copies, so nothing here may crash or report an error.
}
