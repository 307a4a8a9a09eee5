// VariableShards' pulls hand out values without copying them: an update that comes while a
// pull still holds a value's storage goes to fresh memory, and one that comes after goes to
// the same memory.

#include <torch/torch.h>

#include <catch2/catch.hpp>

#include "distribute/parameter_server/variable_shards.h"

using namespace est::distribute;
namespace ps = est::ps;

namespace {

// One shard (id 0) of `value` under plain SGD with learning rate 1, pushed to by worker 0.
void Initialize(VariableShards& shards, const at::Tensor& value) {
  ps::ShardSpec spec;
  spec.set_id(0);
  spec.set_variable("w");
  spec.set_parts(1);
  for (int64_t size : value.sizes()) spec.add_shape(size);
  spec.set_dtype(static_cast<int32_t>(value.scalar_type()));
  spec.mutable_optimizer()->set_kind("SGD");
  spec.mutable_optimizer()->set_lr(1.0);
  ps::UpdateRule rule;
  rule.set_num_workers(1);
  bool initialized_now = false;
  REQUIRE(shards.initialize(1, {spec}, {{{0, ""}, value}}, 0, {}, {}, rule, false, initialized_now).empty());
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
