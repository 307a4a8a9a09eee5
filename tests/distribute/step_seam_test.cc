// The all-reduce strategies' step seam on its own: what StepSync::finish gives every variable,
// and how the replicas' VariableStore applies a step and keeps their buffers.

#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <memory>
#include <vector>

#include "distribute/gradient_reducer.h"
#include "distribute/step_sync.h"
#include "distribute/strategy.h"

using namespace est::distribute;

namespace {

// A replica's step over two variables, `a` with gradient `grad_a` (undefined: backward gave none).
ReplicaStep Step(const at::Tensor& grad_a, double loss) {
  ReplicaStep step;
  at::Tensor a = at::zeros({2}).requires_grad_();
  at::Tensor b = at::zeros({3}).requires_grad_();
  if (grad_a.defined()) a.mutable_grad() = grad_a.clone();
  b.mutable_grad() = at::full({3}, 6.0);
  step.variables = {a, b};
  step.loss = at::scalar_tensor(loss);
  return step;
}

}  // namespace

TEST_CASE("StepSync::finish gives every variable the gradient to apply, a missing one as zeros", "[distribute]") {
  StepSyncOptions options;
  options.micro_batches = 3;
  SECTION("one replica in sync: the sums over the micro-batches become their means") {
    OneDeviceStrategy strategy;
    std::unique_ptr<StepSync> sync = CreateAllReduceStepSync(strategy, options, GradientReducerOptions{});
    std::vector<ReplicaStep> steps = {Step(at::Tensor(), 1.5)};
    sync->finish(steps, StepFlags{});
    CHECK(at::equal(steps[0].variables[0].grad(), at::zeros({2})));
    CHECK(at::equal(steps[0].variables[1].grad(), at::full({3}, 2.0)));
    CHECK(steps[0].loss.item<double>() == 1.5);
  }
  SECTION("three local replicas: the mean over replicas and micro-batches, the loss and flags agreed") {
    MirroredStrategy strategy({"cpu", "cpu", "cpu"});
    std::unique_ptr<StepSync> sync = CreateAllReduceStepSync(strategy, options, GradientReducerOptions{});
    std::vector<ReplicaStep> steps = {Step(at::Tensor(), 1), Step(at::full({2}, 9.0), 2), Step(at::Tensor(), 6)};
    StepFlags local;
    local.stop_signal = true;
    const StepFlags any = sync->finish(steps, local);
    for (const ReplicaStep& step : steps) {
      CHECK(at::allclose(step.variables[0].grad(), at::full({2}, 1.0)));  // (0 + 9 + 0) / 3 / 3
      CHECK(at::allclose(step.variables[1].grad(), at::full({3}, 2.0)));
    }
    CHECK(steps[0].loss.item<double>() == Approx(3.0));
    CHECK(any.stop_signal);
    CHECK_FALSE(any.input_ended);
  }
}

TEST_CASE("The replicas' VariableStore steps the optimizers and keeps the buffers as BufferSync says",
          "[distribute]") {
  // Replica r's float buffer holds r + 1 and its integer buffer 10 (r + 1).
  auto apply = [](BufferSync sync, bool finite, int& optimizer_steps, int64_t& global_step) {
    MirroredStrategy strategy({"cpu", "cpu", "cpu"});
    std::unique_ptr<VariableStore> store = CreateReplicaVariables(strategy, sync);
    std::vector<ReplicaStep> steps(3);
    for (int r = 0; r < 3; ++r) steps[r].buffers = {at::full({2}, r + 1.0f), at::full({1}, 10 * (r + 1), at::kLong)};
    StepUpdate update;
    update.finite = finite;
    update.global_step = 7;
    update.step_optimizers = [&optimizer_steps] { ++optimizer_steps; };
    StepFlags flags;
    global_step = store->apply(steps, update, flags);
    CHECK_FALSE(flags.job_finished);
    return steps;
  };
  int optimizer_steps = 0;
  int64_t global_step = 0;
  SECTION("kBroadcast: every replica takes replica 0's values") {
    for (const ReplicaStep& step : apply(BufferSync::kBroadcast, true, optimizer_steps, global_step)) {
      CHECK(at::equal(step.buffers[0], at::full({2}, 1.0f)));
      CHECK(step.buffers[1].item<int64_t>() == 10);
    }
    CHECK(optimizer_steps == 1);
    CHECK(global_step == 8);
  }
  SECTION("kAverage: floating buffers become their mean, the others replica 0's") {
    for (const ReplicaStep& step : apply(BufferSync::kAverage, true, optimizer_steps, global_step)) {
      CHECK(at::equal(step.buffers[0], at::full({2}, 2.0f)));
      CHECK(step.buffers[1].item<int64_t>() == 10);
    }
  }
  SECTION("kNone: every replica keeps its own") {
    const auto steps = apply(BufferSync::kNone, true, optimizer_steps, global_step);
    for (int r = 0; r < 3; ++r) {
      CHECK(at::equal(steps[r].buffers[0], at::full({2}, static_cast<float>(r + 1))));
      CHECK(steps[r].buffers[1].item<int64_t>() == 10 * (r + 1));
    }
  }
  SECTION("gradients that are not finite: no optimizer steps, the global step still advances") {
    apply(BufferSync::kBroadcast, false, optimizer_steps, global_step);
    CHECK(optimizer_steps == 0);
    CHECK(global_step == 8);
  }
}
