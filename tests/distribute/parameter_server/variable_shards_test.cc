// VariableShards' pulls hand out values without copying them: an update that comes while a
// pull still holds a value's storage goes to fresh memory, and one that comes after goes to
// the same memory. Sync steps clipped by global norm over several tasks wait for the norm.

#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <future>

#include "distribute/parameter_server/variable_shards.h"

using namespace est::distribute;
namespace ps = est::ps;

namespace {

// One shard (`id`) of `value` under plain SGD with learning rate 1, pushed to by `rule`'s
// workers (by default worker 0 alone, asynchronously).
void Initialize(VariableShards& shards, const at::Tensor& value, uint32_t id = 0,
                ps::UpdateRule rule = ps::UpdateRule()) {
  ps::ShardSpec spec;
  spec.set_id(id);
  spec.set_variable("w");
  spec.set_parts(1);
  for (int64_t size : value.sizes()) spec.add_shape(size);
  spec.set_dtype(static_cast<int32_t>(value.scalar_type()));
  spec.mutable_optimizer()->set_kind("SGD");
  spec.mutable_optimizer()->set_lr(1.0);
  if (rule.num_workers() == 0) rule.set_num_workers(1);
  bool initialized_now = false;
  REQUIRE(shards.initialize(1, {spec}, {{{id, ""}, value}}, 0, {}, {}, rule, false, initialized_now).empty());
}

void Push(VariableShards& shards, uint64_t sequence, const at::Tensor& gradient) {
  ShardPush push;
  push.sequence = sequence;
  push.gradients.emplace(0, gradient);
  PushOutcome outcome;
  REQUIRE(shards.apply(push, CallLimit(), outcome).empty());
  CHECK(outcome.global_step == static_cast<int64_t>(sequence));
}

// The value a pull hands out, as the variable service keeps it: a reference to its storage.
c10::Storage PulledStorage(VariableShards& shards) {
  c10::Storage storage;
  shards.pull(0, /*with_state=*/false, CallLimit(), [&](uint32_t, const std::string& slot, const at::Tensor& value) {
    if (slot.empty()) storage = value.storage();
  });
  return storage;
}

at::Tensor Values(const c10::Storage& storage) {
  return torch::from_blob(const_cast<void*>(storage.data()), {4}, torch::kFloat).clone();
}

}  // namespace

TEST_CASE("an update while a pull holds a value goes to a copy; one after it, in place", "[distribute][ps]") {
  VariableShards shards(0);
  Initialize(shards, torch::arange(4, torch::kFloat));
  c10::Storage first = PulledStorage(shards);
  const void* memory = first.data();
  CHECK(torch::equal(Values(first), torch::arange(4, torch::kFloat)));

  // The pull still holds the value: what it sends stays as it was pulled.
  Push(shards, 1, torch::ones({4}));
  CHECK(torch::equal(Values(first), torch::arange(4, torch::kFloat)));
  c10::Storage second = PulledStorage(shards);
  CHECK(second.data() != memory);
  CHECK(torch::equal(Values(second), torch::arange(4, torch::kFloat) - 1));

  // Nobody holds the value any more: the update needs no copy.
  first = c10::Storage();
  const void* current = second.data();
  second = c10::Storage();
  Push(shards, 2, torch::ones({4}));
  c10::Storage third = PulledStorage(shards);
  CHECK(third.data() == current);
  CHECK(torch::equal(Values(third), torch::arange(4, torch::kFloat) - 2));
}

namespace {

// Two workers pushing synchronously, both counted in every step.
ps::UpdateRule SyncOfTwo() {
  ps::UpdateRule rule;
  rule.set_mode(ps::UpdateRule::SYNC);
  rule.set_num_workers(2);
  rule.set_replicas_to_aggregate(2);
  rule.set_liveness_ms(60000);
  return rule;
}

// Clipping by value to [-10, 3], then by global norm 2.5.
ps::Clipping ClipBoth() {
  ps::Clipping clipping;
  clipping.set_by_value(true);
  clipping.set_value_min(-10);
  clipping.set_value_max(3);
  clipping.set_global_norm(2.5);
  return clipping;
}

// Worker `worker`'s sync push of `gradient` to shard `id` for step 0; returns what it did.
PushOutcome SyncPush(VariableShards& shards, uint32_t id, uint32_t worker, uint64_t sequence, const at::Tensor& gradient,
                     bool holds_every_shard = false) {
  ShardPush push;
  push.worker = worker;
  push.sequence = sequence;
  push.gradients.emplace(id, gradient);
  push.clipping = ClipBoth();
  push.holds_every_shard = holds_every_shard;
  PushOutcome outcome;
  CallLimit limit;
  limit.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  const std::string error = shards.apply(push, limit, outcome);
  if (!error.empty()) throw std::runtime_error(error);
  return outcome;
}

// The two workers' pushes to one task, made at once (each waits for the other's).
std::pair<PushOutcome, PushOutcome> PushBoth(VariableShards& shards, uint32_t id, const at::Tensor& first,
                                             const at::Tensor& second, bool holds_every_shard = false) {
  auto other = std::async(std::launch::async, [&] { return SyncPush(shards, id, 1, 1, second, holds_every_shard); });
  PushOutcome mine = SyncPush(shards, id, 0, 1, first, holds_every_shard);
  return {mine, other.get()};
}

at::Tensor ValueOf(VariableShards& shards) {
  at::Tensor value;
  shards.pull(0, /*with_state=*/false, CallLimit(), [&](uint32_t, const std::string& slot, const at::Tensor& tensor) {
    if (slot.empty()) value = tensor.clone();
  });
  return value;
}

}  // namespace

TEST_CASE("a sync step clipped by global norm over two tasks waits for its norm and applies it once",
          "[distribute][ps]") {
  // Task a holds shard 0, task b shard 1. The workers' mean gradients are [4, 0] on a, clipped
  // by value to [3, 0] (a's part of the squared norm: 9), and [0, -4] on b (16): the global
  // norm is 5, so both are scaled by 2.5 / 5 before SGD's step of rate 1 from zero.
  VariableShards a(0);
  VariableShards b(1);
  Initialize(a, torch::zeros({2}), 0, SyncOfTwo());
  Initialize(b, torch::zeros({2}), 1, SyncOfTwo());
  const auto [a0, a1] = PushBoth(a, 0, torch::tensor({3.0f, 0.0f}), torch::tensor({5.0f, 0.0f}));
  const auto [b0, b1] = PushBoth(b, 1, torch::tensor({0.0f, -5.0f}), torch::tensor({0.0f, -3.0f}));
  for (const PushOutcome* outcome : {&a0, &a1, &b0, &b1}) {
    REQUIRE(outcome->round_norm.has_value());
    CHECK(outcome->round_norm->step() == 0);
    CHECK(outcome->round_norm->awaiting());
    CHECK(outcome->global_step == 0);  // nothing applied yet
  }
  CHECK(a0.round_norm->norm_squared() == 9.0);
  CHECK(b1.round_norm->norm_squared() == 16.0);
  CHECK(torch::equal(ValueOf(a), torch::zeros({2})));

  // A late push for the gathered step is dropped, and tells the norm it awaits.
  const PushOutcome late = SyncPush(a, 0, 0, 2, torch::tensor({100.0f, 0.0f}));
  CHECK(late.dropped);
  REQUIRE(late.round_norm.has_value());
  CHECK(late.round_norm->awaiting());
  CHECK(late.round_norm->norm_squared() == 9.0);

  std::string error;
  CHECK(a.finish_round(0, 5.0, error) == 1);
  CHECK(error.empty());
  CHECK(torch::equal(ValueOf(a), torch::tensor({-1.5f, 0.0f})));
  // Another worker's ApplyRound for the same step changes nothing.
  CHECK(a.finish_round(0, 5.0, error) == 1);
  CHECK(torch::equal(ValueOf(a), torch::tensor({-1.5f, 0.0f})));
  // A push for step 0 now, still dropped, tells the applied step's part of the norm, so that
  // its worker can finish task b's step.
  const PushOutcome after = SyncPush(a, 0, 1, 2, torch::tensor({1.0f, 0.0f}));
  CHECK(after.dropped);
  REQUIRE(after.round_norm.has_value());
  CHECK_FALSE(after.round_norm->awaiting());
  CHECK(after.round_norm->norm_squared() == 9.0);
  CHECK(b.finish_round(0, 5.0, error) == 1);
  CHECK(torch::equal(ValueOf(b), torch::tensor({0.0f, 2.0f})));
  CHECK(b.global_step() == 1);
}

TEST_CASE("a task that holds every shard applies a clipped sync step at once and tells its norm", "[distribute][ps]") {
  VariableShards task(0);
  Initialize(task, torch::zeros({2}), 0, SyncOfTwo());
  const auto [first, second] =
      PushBoth(task, 0, torch::tensor({3.0f, -5.0f}), torch::tensor({5.0f, -3.0f}), /*holds_every_shard=*/true);
  for (const PushOutcome* outcome : {&first, &second}) {
    CHECK(outcome->global_step == 1);
    REQUIRE(outcome->round_norm.has_value());
    CHECK_FALSE(outcome->round_norm->awaiting());
    CHECK(outcome->round_norm->norm_squared() == 25.0);
  }
  CHECK(torch::equal(ValueOf(task), torch::tensor({-1.5f, 2.0f})));
}

TEST_CASE("a worker that joins a running bounded-staleness job counts from the slowest worker's pushes",
          "[distribute][ps]") {
  VariableShards shards(0);
  ps::UpdateRule rule;
  rule.set_mode(ps::UpdateRule::BOUNDED);
  rule.set_staleness(1);
  rule.set_num_workers(2);
  rule.set_liveness_ms(60000);
  Initialize(shards, torch::zeros({4}), 0, rule);
  const auto push = [&](uint32_t worker, uint64_t sequence) {
    ShardPush one;
    one.worker = worker;
    one.sequence = sequence;
    one.gradients.emplace(0, torch::ones({4}));
    PushOutcome outcome;
    REQUIRE(shards.apply(one, CallLimit(), outcome).empty());
  };
  for (uint64_t sequence = 1; sequence <= 5; ++sequence) {
    push(0, sequence);
    push(1, sequence);
  }
  // Worker 2, beyond the job's 2, pulls and pushes: it is 5 pushes behind no one, so worker 0
  // may go on one push ahead of the slowest (staleness 1) without waiting for it.
  CallLimit soon;
  soon.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  shards.pull(2, /*with_state=*/false, soon, [](uint32_t, const std::string&, const at::Tensor&) {});
  push(2, 1);
  push(0, 6);
  const auto start = std::chrono::steady_clock::now();
  shards.pull(0, /*with_state=*/false, soon, [](uint32_t, const std::string&, const at::Tensor&) {});
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));  // did not wait for the deadline
  CHECK(shards.max_staleness() <= 1);
}
