// PowerSGD through the GradientReducer on 2 ranks over Gloo: exact for gradients of its rank,
// only the factors on the wire, the same bits on every rank, error feedback, warm-up, options.

#include "distribute/power_sgd.h"

#include <torch/torch.h>

#include <functional>
#include <mutex>
#include <vector>

#include "common/error.h"
#include "distribute/collective/collective.h"
#include "distribute/gradient_reducer.h"
#include "tests/distribute/gloo_ranks.h"

#include <catch2/catch.hpp>

// The file's own names, apart from those of the tests compiled with it in one unit.
namespace power_sgd_test {
using namespace est::distribute;
using est::testing::ConnectGlooRanks;
using est::testing::RunRanks;

namespace {

// Forwards to `inner`, recording the number of values of each all-reduce.
class CountingCollective : public Collective {
 public:
  explicit CountingCollective(std::shared_ptr<Collective> inner) : inner_(std::move(inner)) {}
  int rank() const override { return inner_->rank(); }
  int world_size() const override { return inner_->world_size(); }
  std::string name() const override { return inner_->name(); }
  void allreduce(at::Tensor& tensor, ReduceOp op) override {
    numels.push_back(tensor.numel());
    inner_->allreduce(tensor, op);
  }
  void broadcast(at::Tensor& tensor, int root) override { inner_->broadcast(tensor, root); }
  at::Tensor allgather(const at::Tensor& tensor) override { return inner_->allgather(tensor); }
  void barrier() override { inner_->barrier(); }
  std::vector<int64_t> numels;

 private:
  std::shared_ptr<Collective> inner_;
};

// Gradient of parameter k on rank r at step s.
using GradientOf = std::function<torch::Tensor(size_t k, int r, int s)>;

struct RankRun {
  std::vector<std::vector<torch::Tensor>> averages;  ///< [step][parameter]
  std::vector<int64_t> allreduce_numels;             ///< of every all-reduce, in order
};

// `steps` steps of a reducer with `options` over parameters of `shapes`, on 2 ranks
// (threads, Gloo over TCP); every rank's averaged gradients of every step.
std::vector<RankRun> ReduceSteps(const GradientReducerOptions& options, const std::vector<std::vector<int64_t>>& shapes,
                                 int steps, const GradientOf& gradient) {
  const int world = 2;
  auto collectives = ConnectGlooRanks(world, /*shared_memory=*/false);
  return RunRanks<RankRun>(world, [&](int rank) {
    CountingCollective counting(collectives[rank]);
    std::vector<torch::Tensor> parameters;
    for (const auto& shape : shapes) parameters.push_back(torch::zeros(shape, torch::requires_grad()));
    GradientReducer reducer(counting, parameters, world, options);
    RankRun run;
    for (int step = 0; step < steps; ++step) {
      torch::Tensor loss = torch::zeros({});
      for (size_t k = 0; k < parameters.size(); ++k) {
        parameters[k].mutable_grad() = torch::Tensor();
        loss = loss + (parameters[k] * gradient(k, rank, step)).sum();
      }
      reducer.prepare();
      loss.backward();
      reducer.finish();
      std::vector<torch::Tensor> averages;
      for (const auto& parameter : parameters) averages.push_back(parameter.grad().clone());
      run.averages.push_back(averages);
    }
    run.allreduce_numels = counting.numels;
    return run;
  });
}

GradientReducerOptions PowerSgd(int64_t rank, int64_t warmup = 0) {
  return GradientReducerOptions()
      .compression(GradientCompression::kPowerSgd)
      .power_sgd(PowerSgdOptions().rank(rank).warmup_steps(warmup));
}

double RelativeError(const torch::Tensor& value, const torch::Tensor& exact) {
  return ((value - exact).norm() / exact.norm()).item<double>();
}

void RequireSameOnBothRanks(const std::vector<RankRun>& runs) {
  for (size_t step = 0; step < runs[0].averages.size(); ++step)
    for (size_t k = 0; k < runs[0].averages[step].size(); ++k)
      REQUIRE(torch::equal(runs[0].averages[step][k], runs[1].averages[step][k]));
}

}  // namespace

TEST_CASE("PowerSGD is exact for gradients of its rank and sends only the factors", "[distribute]") {
  // A 64 x 48 matrix (compressed at rank 2: (64 + 48) * 2 * 2 <= 3072), a bias and a 3 x 2
  // matrix too small to gain (plain float32).
  const std::vector<std::vector<int64_t>> shapes = {{64, 48}, {48}, {3, 2}};
  torch::manual_seed(1);
  const torch::Tensor left = torch::randn({64, 2});                             // shared by the ranks
  const std::vector<torch::Tensor> right = {torch::randn({48, 2}), torch::randn({48, 2})};  // per rank
  const std::vector<torch::Tensor> bias = {torch::randn({48}), torch::randn({48})};
  const std::vector<torch::Tensor> small = {torch::randn({3, 2}), torch::randn({3, 2})};
  GradientOf gradient = [&](size_t k, int r, int s) {
    const double scale = 1.0 + s;
    if (k == 0) return torch::mm(left, right[r].t()) * scale;  // the ranks' sum has rank 2
    return (k == 1 ? bias[r] : small[r]) * scale;
  };
  const auto runs = ReduceSteps(PowerSgd(2), shapes, 3, gradient);
  RequireSameOnBothRanks(runs);
  for (int step = 0; step < 3; ++step) {
    INFO("step " << step);
    const auto& averages = runs[0].averages[static_cast<size_t>(step)];
    CHECK(RelativeError(averages[0], (gradient(0, 0, step) + gradient(0, 1, step)) / 2) < 1e-5);
    // The plain values: the float32 sum, divided, as without compression.
    CHECK(torch::equal(averages[1], (gradient(1, 0, step) + gradient(1, 1, step)) / 2));
    CHECK(torch::equal(averages[2], (gradient(2, 0, step) + gradient(2, 1, step)) / 2));
  }
  // Each step: the P factors with the plain values (64 * 2 + 48 + 6), then the Q factors (48 * 2).
  CHECK(runs[0].allreduce_numels == std::vector<int64_t>{182, 96, 182, 96, 182, 96});
}

TEST_CASE("PowerSGD's error feedback sends later what one step's approximation left out", "[distribute]") {
  // Full-rank gradients, the same each step: rank 1 keeps little of a 32 x 24 matrix in one
  // step, but what it leaves out goes into later steps, so the mean over K steps closes in on
  // the average as 1/K (the errors stay bounded). Without error feedback it would stay where
  // one step is. Measured: one step 0.97; the mean of 60 steps 0.22, of 240 steps 0.059.
  torch::manual_seed(2);
  const std::vector<torch::Tensor> values = {torch::randn({32, 24}), torch::randn({32, 24})};
  const auto runs = ReduceSteps(PowerSgd(1), {{32, 24}}, 240, [&](size_t, int r, int) { return values[r]; });
  RequireSameOnBothRanks(runs);
  const torch::Tensor exact = (values[0] + values[1]) / 2;
  auto mean_error = [&](int steps) {
    torch::Tensor sum = torch::zeros_like(exact);
    for (int step = 0; step < steps; ++step) sum += runs[0].averages[static_cast<size_t>(step)][0];
    return RelativeError(sum / steps, exact);
  };
  const double one = mean_error(1), sixty = mean_error(60), all = mean_error(240);
  CHECK(one > 0.5);  // compressed: one step keeps little
  CHECK(sixty < one / 2);
  CHECK(all < sixty / 2.5);
  CHECK(all < 0.08);
}

TEST_CASE("PowerSGD's warm-up steps are the uncompressed all-reduce's, to the bit", "[distribute]") {
  torch::manual_seed(3);
  const std::vector<torch::Tensor> values = {torch::randn({40, 30}), torch::randn({40, 30})};
  GradientOf gradient = [&](size_t, int r, int s) { return values[r] * (1 + s); };
  const auto plain = ReduceSteps(GradientReducerOptions(), {{40, 30}}, 3, gradient);
  const auto warm = ReduceSteps(PowerSgd(1, /*warmup=*/2), {{40, 30}}, 3, gradient);
  CHECK(torch::equal(warm[0].averages[0][0], plain[0].averages[0][0]));
  CHECK(torch::equal(warm[0].averages[1][0], plain[0].averages[1][0]));
  CHECK(RelativeError(warm[0].averages[2][0], plain[0].averages[2][0]) > 0.1);  // step 3 is compressed
  CHECK(warm[0].allreduce_numels == std::vector<int64_t>{1200, 1200, 40, 30});
}

TEST_CASE("PowerSGD's options are range-checked", "[distribute]") {
  CHECK_THROWS_MATCHES(PowerSgdOptions().rank(0).validate(), est::ConfigError,
                       Catch::Message("PowerSgdOptions: rank must be in [1, 64], got 0"));
  CHECK_THROWS_MATCHES(PowerSgdOptions().warmup_steps(-1).validate(), est::ConfigError,
                       Catch::Message("PowerSgdOptions: warmup_steps must not be negative, got -1"));
  CHECK(ParseGradientCompression("powersgd", "--flag") == GradientCompression::kPowerSgd);
}

}  // namespace power_sgd_test
