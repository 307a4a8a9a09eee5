#include "distribute/strategy.h"

#include <ATen/ATen.h>
#include <torch/cuda.h>

#include "common/error.h"

#include <catch2/catch.hpp>

#include "tests/torch_cuda_devices.h"

using namespace est::distribute;

TEST_CASE("strategies report their replicas and input context", "[distribute]") {
  auto one = OneDeviceStrategy::Create("cpu");
  CHECK(one->num_replicas_in_sync() == 1);
  CHECK(one->local_devices() == std::vector<c10::Device>{c10::Device(c10::kCPU)});
  auto mirrored = MirroredStrategy::Create({"cpu", "cpu", "cpu"});
  CHECK(mirrored->num_replicas_in_sync() == 3);
  CHECK(mirrored->num_local_replicas() == 3);
  CHECK(mirrored->is_chief());
  InputContext input = mirrored->input_context();
  CHECK(input.num_input_pipelines() == 1);
  CHECK(input.num_replicas_in_sync() == 3);
  CHECK(input.per_replica_batch_size(12) == 4);
  CHECK(mirrored->run([](int replica) { return replica * 10; }) == std::vector<int>{0, 10, 20});
}

TEST_CASE("strategies reject malformed devices", "[distribute]") {
  CHECK_THROWS_WITH(OneDeviceStrategy("gpu zero"), Catch::Contains("gpu zero"));
  // An empty list is no list: every local device (default_devices_test.cc).
  CHECK(MirroredStrategy(std::vector<std::string>{}).local_devices() == MirroredStrategy().local_devices());
  CHECK_THROWS_WITH(MirroredStrategy({"cpu", "cuda:x"}), Catch::Contains("cuda:x"));
  CHECK_THROWS_WITH(OneDeviceStrategy("meta"),
                    Catch::Contains("device 'meta' is neither a CPU nor a CUDA device; expected \"cpu\" or \"cuda:<index>\""));
}

TEST_CASE("CheckDeviceAvailable takes the CUDA devices LibTorch sees and names the ones it does not", "[distribute]") {
  // A strategy may name another machine's GPUs; replicas check their device when created.
  CHECK(OneDeviceStrategy("cuda:1").local_devices()[0] == c10::Device(c10::kCUDA, 1));
  CHECK_NOTHROW(CheckDeviceAvailable(c10::Device("cpu")));
  const auto gpus = static_cast<int64_t>(torch::cuda::device_count());
  if (gpus == 0) {
    CHECK_THROWS_WITH(CheckDeviceAvailable(c10::Device("cuda:0")),
                      Catch::Contains("device 'cuda:0' needs CUDA, but LibTorch sees no CUDA device (this LibTorch has "
                                      "no CUDA, or no GPU is visible); use \"cpu\""));
  } else {
    CHECK_NOTHROW(CheckDeviceAvailable(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(gpus - 1))));
    CHECK_THROWS_WITH(CheckDeviceAvailable(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(gpus))),
                      Catch::Contains("does not exist: LibTorch sees " + std::to_string(gpus) + " CUDA device(s)"));
  }
}

TEST_CASE("reduce sums or averages per-replica values, optionally along an axis", "[distribute]") {
  MirroredStrategy strategy({"cpu", "cpu"});
  std::vector<at::Tensor> values = {at::tensor({1.0, 2.0, 3.0}), at::tensor({5.0, 6.0, 7.0})};
  CHECK(at::equal(strategy.reduce(ReduceOp::kSum, values), at::tensor({6.0, 8.0, 10.0})));
  CHECK(at::equal(strategy.reduce(ReduceOp::kMean, values), at::tensor({3.0, 4.0, 5.0})));
  CHECK(strategy.reduce(ReduceOp::kSum, values, 0).item<double>() == 24.0);
  // MEAN along the axis weighs every element: (1+2+3+5+6+7+8) / 7 with an uneven second replica.
  std::vector<at::Tensor> uneven = {at::tensor({1.0, 2.0, 3.0}), at::tensor({5.0, 6.0, 7.0, 8.0})};
  CHECK(strategy.reduce(ReduceOp::kMean, uneven, 0).item<double>() == Approx(32.0 / 7));
  CHECK_THROWS_AS(strategy.reduce(ReduceOp::kSum, {at::tensor({1.0})}), est::ConfigError);
}

TEST_CASE("average_across_replicas makes every replica hold the mean", "[distribute]") {
  MirroredStrategy strategy({"cpu", "cpu"});
  std::vector<std::vector<at::Tensor>> per_replica = {
      {at::tensor({1.0f, 3.0f}), at::scalar_tensor(2.0f)},
      {at::tensor({3.0f, 5.0f}), at::scalar_tensor(4.0f)},
  };
  strategy.average_across_replicas(per_replica);
  for (const auto& replica : per_replica) {
    CHECK(at::equal(replica[0], at::tensor({2.0f, 4.0f})));
    CHECK(replica[1].item<float>() == 3.0f);
  }
  CHECK_FALSE(strategy.any_worker(false));
  CHECK(strategy.any_worker(true));
}

TEST_CASE("average_across_replicas on two GPUs sums on the first and leaves each value on its device",
          "[distribute][cuda]") {
  EST_REQUIRE_TORCH_CUDA_DEVICES(2);
  MirroredStrategy strategy({"cuda:0", "cuda:1"});
  const c10::Device gpu0("cuda:0"), gpu1("cuda:1");
  std::vector<std::vector<at::Tensor>> per_replica = {
      {at::tensor({1.0f, 3.0f}).to(gpu0), at::scalar_tensor(2.0, at::kDouble).to(gpu0), at::scalar_tensor(1.0f), {}},
      {at::tensor({3.0f, 6.0f}).to(gpu1), at::scalar_tensor(4.0, at::kDouble).to(gpu1), at::scalar_tensor(0.0f), {}},
  };
  strategy.average_across_replicas(per_replica);
  for (size_t r = 0; r < 2; ++r) {
    CAPTURE(r);
    const auto& replica = per_replica[r];
    CHECK(replica[0].device() == (r == 0 ? gpu0 : gpu1));
    CHECK(replica[1].device() == (r == 0 ? gpu0 : gpu1));
    CHECK(replica[2].device().is_cpu());
    CHECK(replica[1].scalar_type() == at::kDouble);
    CHECK(at::equal(replica[0].cpu(), at::tensor({2.0f, 4.5f})));
    CHECK(replica[1].item<double>() == 3.0);
    CHECK(replica[2].item<float>() == 0.5f);
    CHECK_FALSE(replica[3].defined());
  }
}
