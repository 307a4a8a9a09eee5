// The gradient paths over the NCCL collective, workers as threads, one GPU each: the
// GradientReducer's device buckets, and MultiWorkerMirroredStrategy's average over two local
// GPUs per worker (summed on the first, reduced across workers there, copied back).

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "distribute/collective/nccl/nccl_collective.h"
#include "distribute/gradient_reducer.h"
#include "distribute/multi_worker_mirrored_strategy.h"
#include "distribute/rendezvous/store.h"
#include "tests/distribute/collective/nccl/cuda_test_util.h"
#include "tests/distribute/rank_threads.h"

namespace est::distribute {
namespace {

using namespace std::chrono_literals;
using namespace est::testing;

std::shared_ptr<Collective> Connect(const std::shared_ptr<Store>& store, int rank, int world_size) {
  NcclCollectiveOptions options;
  options.timeout = 30s;
  return CreateNcclCollective(store, rank, world_size, Gpu(rank), options);
}

TEST_CASE("GradientReducer over NCCL averages gradients in buckets on each rank's GPU", "[distribute][nccl][cuda]") {
  EST_REQUIRE_CUDA_DEVICES(2);
  const int world = 2;
  auto store = CreateInMemoryStore();
  struct Outcome {
    std::vector<at::Tensor> grads;  // on the CPU
    std::vector<c10::Device> devices;
    at::Tensor extras;
  };
  const auto outcomes = RunRanks<Outcome>(world, [&](int rank) {
    auto collective = Connect(store, rank, world);
    std::vector<at::Tensor> parameters;
    for (int64_t n : {10, 20, 30, 40}) {
      parameters.push_back(at::zeros({n}, at::TensorOptions().device(Gpu(rank))).requires_grad_());
    }
    Outcome outcome;
    {
      GradientReducer reducer(*collective, parameters, world,
                              GradientReducerOptions().first_bucket_bytes(64).bucket_cap_bytes(128),
                              /*extras_numel=*/1);
      for (int step = 1; step <= 2; ++step) {
        for (auto& p : parameters) p.mutable_grad() = at::Tensor();
        reducer.prepare(at::full({1}, static_cast<float>(rank + step)));
        at::Tensor loss = at::zeros({}, at::TensorOptions().device(Gpu(rank)));
        for (size_t k = 0; k < parameters.size(); ++k) {
          loss = loss + (parameters[k] * static_cast<float>((rank + 1) * (k + 1) * step)).sum();
        }
        loss.backward();
        reducer.finish();
      }
      outcome.extras = reducer.extras().cpu();
    }
    for (auto& p : parameters) {
      outcome.grads.push_back(p.grad().cpu());
      outcome.devices.push_back(p.grad().device());
    }
    return outcome;
  });
  for (int rank = 0; rank < world; ++rank) {
    CAPTURE(rank);
    const Outcome& outcome = outcomes[rank];
    // Parameter k's gradient at step 2 on rank r is 2(r+1)(k+1); the mean over ranks is 3(k+1).
    for (size_t k = 0; k < outcome.grads.size(); ++k) {
      CAPTURE(k);
      CHECK(outcome.devices[k] == Gpu(rank));
      CHECK(at::equal(outcome.grads[k], at::full_like(outcome.grads[k], 3.0f * (k + 1))));
    }
    CHECK(at::equal(outcome.extras, at::full({1}, 2.5f)));  // step 2: mean of 2 and 3
  }
}

TEST_CASE("MultiWorkerMirroredStrategy over NCCL averages two local GPUs per worker", "[distribute][nccl][cuda]") {
  EST_REQUIRE_CUDA_DEVICES(2);
  const int world = 2;
  auto store = CreateInMemoryStore();
  // A replica's values after the average, on the CPU, and the devices they were left on (-1: the CPU).
  struct Replica {
    std::vector<at::Tensor> values;
    std::vector<int> devices;
  };
  // Worker w's collective is on GPU w, its first local device; its second replica shares the
  // other worker's GPU. Worker w's replica i holds 10w + i + 1, and a CPU flag.
  const auto workers = RunRanks<std::vector<Replica>>(world, [&](int rank) {
    const std::vector<std::string> devices = {"cuda:" + std::to_string(rank), "cuda:" + std::to_string(1 - rank)};
    auto strategy = MultiWorkerMirroredStrategy::CreateWithCollective(Connect(store, rank, world), devices);
    std::vector<std::vector<at::Tensor>> per_replica;
    for (int i = 0; i < 2; ++i) {
      const c10::Device device = strategy->local_devices()[static_cast<size_t>(i)];
      per_replica.push_back({at::full({3}, static_cast<float>(10 * rank + i + 1), at::TensorOptions().device(device)),
                             at::scalar_tensor(rank == 0 && i == 0 ? 1.0f : 0.0f)});
    }
    strategy->average_across_replicas(per_replica);
    std::vector<Replica> replicas(2);
    for (size_t i = 0; i < 2; ++i) {
      for (const at::Tensor& value : per_replica[i]) {
        replicas[i].values.push_back(value.cpu());
        replicas[i].devices.push_back(value.device().is_cuda() ? value.device().index() : -1);
      }
    }
    return replicas;
  });
  // The mean of 1, 2, 11 and 12 is 6.5; of the flags, 0.25.
  for (int rank = 0; rank < world; ++rank) {
    for (int i = 0; i < 2; ++i) {
      CAPTURE(rank, i);
      const Replica& replica = workers[static_cast<size_t>(rank)][static_cast<size_t>(i)];
      CHECK(at::equal(replica.values[0], at::full({3}, 6.5f)));
      CHECK(replica.values[1].item<float>() == 0.25f);
      CHECK(replica.devices == std::vector<int>{i == 0 ? rank : 1 - rank, -1});
    }
  }
}

}  // namespace
}  // namespace est::distribute
