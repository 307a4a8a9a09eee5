// AsyncHostCopy: host tensors pass through; a GPU value lands on the host with its value.

#include <torch/torch.h>

#include "estimator/async_host_copy.h"
#include "tests/torch_cuda_devices.h"

#include <catch2/catch.hpp>

using est::AsyncHostCopy;

TEST_CASE("AsyncHostCopy passes host tensors through untouched", "[estimator]") {
  AsyncHostCopy copy;
  const auto loss = torch::tensor(0.25f);
  const auto host = copy.start(loss);
  copy.wait();
  CHECK(host.data_ptr() == loss.data_ptr());
  CHECK(!copy.start(at::Tensor()).defined());
  copy.wait();
}

TEST_CASE("AsyncHostCopy brings a GPU value to pinned host memory while later work runs", "[estimator][cuda]") {
  EST_REQUIRE_TORCH_CUDA_DEVICES(1);
  AsyncHostCopy copy;
  auto big = torch::randn({4096, 4096}, torch::Device("cuda:0"));
  for (int step = 0; step < 5; ++step) {
    const auto loss = (big.sum() * 0 + step + 0.5).to(torch::kFloat);
    const auto host = copy.start(loss);
    for (int i = 0; i < 10; ++i) big = torch::tanh(big.matmul(big) * 1e-3);  // queued after the copy
    copy.wait();
    CHECK(host.is_cpu());
    CHECK(host.is_pinned());
    CHECK(host.item<float>() == static_cast<float>(step) + 0.5f);
  }
}
