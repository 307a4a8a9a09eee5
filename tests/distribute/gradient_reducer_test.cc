#include "distribute/gradient_reducer.h"

#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "distribute/collective/collective.h"
#include "tests/distribute/gloo_ranks.h"

#include <catch2/catch.hpp>

using namespace est::distribute;
using est::testing::ConnectGlooRanks;
using est::testing::RunRanks;

namespace {

// Forwards to `inner`, counting its all-reduces (from the reducer's communication thread);
// it can claim to all-reduce on the CPU among `world_size` ranks (0: inner's).
class CountingCollective final : public Collective {
 public:
  explicit CountingCollective(Collective& inner, bool computes_on_cpu = false, int world_size = 0)
      : inner_(inner), computes_on_cpu_(computes_on_cpu), world_size_(world_size) {}
  int rank() const override { return inner_.rank(); }
  int world_size() const override { return world_size_ > 0 ? world_size_ : inner_.world_size(); }
  std::string name() const override { return inner_.name(); }
  void allreduce(at::Tensor& tensor, ReduceOp op) override {
    inner_.allreduce(tensor, op);
    ++allreduces;
  }
  void broadcast(at::Tensor& tensor, int root) override { inner_.broadcast(tensor, root); }
  at::Tensor allgather(const at::Tensor& tensor) override { return inner_.allgather(tensor); }
  void barrier() override { inner_.barrier(); }
  bool allreduce_computes_on_cpu() const override { return computes_on_cpu_; }
  std::atomic<int> allreduces{0};

 private:
  Collective& inner_;
  bool computes_on_cpu_;
  int world_size_;
};

// Parameters of 10, 20, 30 and 40 float32 elements.
std::vector<torch::Tensor> MakeParameters() {
  std::vector<torch::Tensor> parameters;
  for (int64_t n : {10, 20, 30, 40}) parameters.push_back(torch::zeros({n}, torch::requires_grad()));
  return parameters;
}

}  // namespace

TEST_CASE("GradientReducer buckets parameters in reverse order, first bucket small", "[distribute]") {
  auto collectives = ConnectGlooRanks(1);
  auto parameters = MakeParameters();  // 40, 80, 120, 160 bytes
  GradientReducer reducer(*collectives[0], parameters, 1,
                          GradientReducerOptions().first_bucket_bytes(160).bucket_cap_bytes(200));
  // Reverse order: 160 (first bucket, full), then 120 + 80 = 200 (cap), then 40.
  CHECK(reducer.bucket_bytes() == std::vector<int64_t>{160, 200, 40});
  GradientReducer one_bucket(*collectives[0], MakeParameters(), 1);
  CHECK(one_bucket.num_buckets() == 1);
}

TEST_CASE("GradientReducer averages gradients over ranks while backward runs", "[distribute]") {
  const int world = 3;
  auto collectives = ConnectGlooRanks(world);
  auto grads = RunRanks<std::vector<torch::Tensor>>(world, [&](int rank) {
    auto parameters = MakeParameters();
    GradientReducer reducer(
        *collectives[rank], parameters, world,
        GradientReducerOptions().first_bucket_bytes(64).bucket_cap_bytes(128).overlap(BackwardOverlap::kAlways));
    CHECK(reducer.overlaps_backward());
    std::vector<torch::Tensor> last;
    for (int step = 1; step <= 3; ++step) {  // reuse across steps
      for (auto& p : parameters) p.mutable_grad() = torch::Tensor();
      reducer.prepare();
      torch::Tensor loss = torch::zeros({});
      for (size_t k = 0; k < parameters.size(); ++k)
        loss = loss + (parameters[k] * static_cast<float>((rank + 1) * (k + 1) * step)).sum();
      loss.backward();
      reducer.finish();
    }
    for (auto& p : parameters) last.push_back(p.grad().clone());
    return last;
  });
  // Gradient of parameter k at step 3 on rank r is 3(r+1)(k+1); the mean over ranks is 3·2·(k+1).
  for (const auto& rank_grads : grads)
    for (size_t k = 0; k < rank_grads.size(); ++k)
      CHECK(torch::equal(rank_grads[k], torch::full_like(rank_grads[k], 6.0f * (k + 1))));
}

TEST_CASE("GradientReducer::finish hands over each bucket as its averages are in .grad, in bucket order",
          "[distribute]") {
  const int world = 2;
  auto collectives = ConnectGlooRanks(world);
  RunRanks<int>(world, [&](int rank) {
    auto parameters = MakeParameters();
    // Buckets: {3} (160 bytes), {2, 1} (200 bytes), {0}.
    GradientReducer reducer(*collectives[rank], parameters, world,
                            GradientReducerOptions().first_bucket_bytes(160).bucket_cap_bytes(200));
    for (int step = 1; step <= 2; ++step) {
      reducer.prepare();
      torch::Tensor loss = torch::zeros({});
      for (size_t k = 0; k < parameters.size(); ++k)
        loss = loss + (parameters[k] * static_cast<float>((rank + 1) * (k + 1))).sum();
      loss.backward();
      std::vector<std::vector<size_t>> handed;
      reducer.finish([&](const std::vector<size_t>& bucket) {
        handed.push_back(bucket);
        // The mean over ranks of (r + 1)(k + 1) is 1.5(k + 1): final when handed over.
        for (size_t k : bucket)
          CHECK(torch::equal(parameters[k].grad(), torch::full_like(parameters[k], 1.5f * (k + 1))));
      });
      CHECK(handed == std::vector<std::vector<size_t>>{{3}, {2, 1}, {0}});
      for (auto& p : parameters) p.mutable_grad() = torch::Tensor();
    }
    // An error of the caller's comes out of finish() once every bucket is back; the reducer
    // goes on.
    for (int attempt = 0; attempt < 2; ++attempt) {
      reducer.prepare();
      torch::Tensor loss = torch::zeros({});
      for (auto& p : parameters) loss = loss + p.sum();
      loss.backward();
      int calls = 0;
      const auto fail_once = [&](const std::vector<size_t>&) {
        if (++calls == 1 && attempt == 0) throw std::runtime_error("caller failed");
      };
      if (attempt == 0) {
        CHECK_THROWS_WITH(reducer.finish(fail_once), "caller failed");
        CHECK(calls == 1);  // no bucket is handed over after an error
      } else {
        reducer.finish(fail_once);
        CHECK(calls == 3);
        for (auto& p : parameters) CHECK(torch::equal(p.grad(), torch::ones_like(p)));
      }
      for (auto& p : parameters) p.mutable_grad() = torch::Tensor();
    }
    return 0;
  });
}

TEST_CASE("GradientReducer counts a parameter without gradient as zero", "[distribute]") {
  auto collectives = ConnectGlooRanks(2);
  auto grads = RunRanks<std::vector<torch::Tensor>>(2, [&](int rank) {
    auto parameters = MakeParameters();
    GradientReducer reducer(*collectives[rank], parameters, 2);
    reducer.prepare();
    // Rank 0 does not use parameter 3; rank 1 does, with gradient 4.
    torch::Tensor loss = parameters[0].sum() + parameters[1].sum() + parameters[2].sum();
    if (rank == 1) loss = loss + (parameters[3] * 4).sum();
    loss.backward();
    reducer.finish();
    std::vector<torch::Tensor> result;
    for (auto& p : parameters) result.push_back(p.grad().clone());
    return result;
  });
  for (const auto& rank_grads : grads) {
    CHECK(torch::equal(rank_grads[0], torch::ones({10})));
    CHECK(torch::equal(rank_grads[3], torch::full({40}, 2.0f)));
  }
}

TEST_CASE("GradientReducer with accumulated micro-batches averages the sums", "[distribute]") {
  auto collectives = ConnectGlooRanks(2);
  auto grads = RunRanks<torch::Tensor>(2, [&](int rank) {
    auto parameters = MakeParameters();
    GradientReducer reducer(*collectives[rank], parameters, 2);
    (parameters[0] * static_cast<float>(rank + 1)).sum().backward();  // micro-batch 1: no sync
    reducer.prepare();                                                // micro-batch 2: sync
    (parameters[0] * 10.0f).sum().backward();
    reducer.finish();
    return parameters[0].grad().clone();
  });
  // Rank sums are 1 + 10 and 2 + 10; their mean is 11.5.
  for (const auto& grad : grads) CHECK(torch::equal(grad, torch::full({10}, 11.5f)));
}

TEST_CASE("GradientReducer closes a bucket once it reaches its cap, as DDP does", "[distribute]") {
  auto collectives = ConnectGlooRanks(1);
  // Reverse order 160, 120, 80, 40 bytes: 160 reaches the first cap (100); 120 is under
  // the cap (150), so 80 joins it; 40 starts the last bucket.
  GradientReducer reducer(*collectives[0], MakeParameters(), 1,
                          GradientReducerOptions().first_bucket_bytes(100).bucket_cap_bytes(150));
  CHECK(reducer.bucket_bytes() == std::vector<int64_t>{160, 200, 40});
}

TEST_CASE("GradientReducer keeps each bucket on its parameters' device", "[distribute]") {
  auto collectives = ConnectGlooRanks(1);
  // Parameter 1 (20 floats) is on another device (meta: shapes without data). In reverse
  // order, 40 and 30 floats on the CPU share a bucket, the meta parameter starts its own, and
  // parameter 0 a third, though all of them fit under the default caps.
  auto parameters = MakeParameters();
  parameters[1] = torch::zeros({20}, torch::TensorOptions().device(torch::kMeta).requires_grad(true));
  GradientReducer reducer(*collectives[0], parameters, 1);
  CHECK(reducer.bucket_bytes() == std::vector<int64_t>{280, 80, 40});
  CHECK(GradientReducer(*collectives[0], MakeParameters(), 1).bucket_bytes() == std::vector<int64_t>{400});
}

TEST_CASE("GradientReducer carries extras in its last bucket and averages them with the gradients", "[distribute]") {
  const int world = 2;
  auto collectives = ConnectGlooRanks(world);
  auto results = RunRanks<std::pair<torch::Tensor, torch::Tensor>>(world, [&](int rank) {
    auto parameters = MakeParameters();
    GradientReducer reducer(*collectives[rank], parameters, world,
                            GradientReducerOptions().first_bucket_bytes(160).bucket_cap_bytes(200),
                            /*extras_numel=*/2);
    CHECK(reducer.bucket_bytes() == std::vector<int64_t>{160, 200, 48});  // 40 bytes + 2 floats
    std::pair<torch::Tensor, torch::Tensor> last;
    for (int step = 1; step <= 2; ++step) {
      reducer.prepare(torch::tensor({static_cast<float>(rank + step), static_cast<float>(rank * 10)}));
      for (auto& p : parameters) p.mutable_grad() = torch::Tensor();
      (parameters[0] * static_cast<float>(rank + 1)).sum().backward();
      reducer.finish();
      last = {reducer.extras().clone(), parameters[0].grad().clone()};
    }
    return last;
  });
  for (const auto& [extras, grad] : results) {
    CHECK(torch::equal(extras, torch::tensor({2.5f, 5.0f})));  // step 2: mean of (2, 0) and (3, 10)
    CHECK(torch::equal(grad, torch::full({10}, 1.5f)));
  }
}

TEST_CASE("GradientReducer with overlap never all-reduces every bucket in finish, with the same averages",
          "[distribute]") {
  auto collectives = ConnectGlooRanks(1);
  for (BackwardOverlap overlap : {BackwardOverlap::kAlways, BackwardOverlap::kNever}) {
    CAPTURE(BackwardOverlapName(overlap));
    CountingCollective counting(*collectives[0]);
    auto parameters = MakeParameters();
    GradientReducer reducer(counting, parameters, 2,
                            GradientReducerOptions().first_bucket_bytes(64).bucket_cap_bytes(128).overlap(overlap));
    REQUIRE(reducer.num_buckets() == 3);
    CHECK(reducer.overlaps_backward() == (overlap == BackwardOverlap::kAlways));
    reducer.prepare();
    torch::Tensor loss = torch::zeros({});
    for (size_t k = 0; k < parameters.size(); ++k) loss = loss + (parameters[k] * static_cast<float>(k + 1)).sum();
    loss.backward();
    // Backward filled every bucket: with overlap all three go at once, without none before finish().
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    const int expected = overlap == BackwardOverlap::kAlways ? 3 : 0;
    while (counting.allreduces.load() < expected && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (expected == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(counting.allreduces.load() == expected);
    reducer.finish();
    CHECK(counting.allreduces.load() == 3);
    // One rank, divisor 2: half of each gradient k + 1.
    for (size_t k = 0; k < parameters.size(); ++k)
      CHECK(torch::equal(parameters[k].grad(), torch::full_like(parameters[k], 0.5f * static_cast<float>(k + 1))));
  }
}

TEST_CASE("BackwardOverlap kAuto overlaps unless a CPU all-reduce would take backward's cores", "[distribute]") {
  auto collectives = ConnectGlooRanks(1);
  // A network (or device) all-reduce mostly waits: always worth overlapping.
  CountingCollective network(*collectives[0]);
  CHECK(OverlapsBackward(BackwardOverlap::kAuto, network));
  CHECK_FALSE(OverlapsBackward(BackwardOverlap::kNever, network));
  // A shared-memory all-reduce among as many ranks as the machine has CPUs leaves no core to spare.
  CountingCollective crowded(*collectives[0], /*computes_on_cpu=*/true,
                             static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  CHECK_FALSE(OverlapsBackward(BackwardOverlap::kAuto, crowded));
  CHECK(OverlapsBackward(BackwardOverlap::kAlways, crowded));

  // cpus of the process, machine cpus, ranks on the host, intra-op threads.
  CHECK_FALSE(HasSpareCore(1, 2, 2, 1));   // each rank bound to one CPU
  CHECK_FALSE(HasSpareCore(2, 2, 2, 1));   // unbound, but the other rank has the other CPU
  CHECK(HasSpareCore(4, 16, 4, 3));        // 4 CPUs each, 3 intra-op threads
  CHECK_FALSE(HasSpareCore(16, 16, 4, 4));  // unbound: a quarter of the machine, all busy
  CHECK(HasSpareCore(16, 16, 2, 4));
  CHECK_FALSE(HasSpareCore(0, 0, 0, 1));   // nothing known: one core
}

TEST_CASE("ParseBackwardOverlap takes auto, always and never, and names the flag otherwise", "[distribute]") {
  for (BackwardOverlap overlap : {BackwardOverlap::kAuto, BackwardOverlap::kAlways, BackwardOverlap::kNever})
    CHECK(ParseBackwardOverlap(BackwardOverlapName(overlap), "--overlap") == overlap);
  CHECK_THROWS_WITH(ParseBackwardOverlap("sometimes", "--overlap"),
                    Catch::Contains("--overlap") && Catch::Contains("'sometimes'") &&
                        Catch::Contains("expected auto, always or never"));
}
