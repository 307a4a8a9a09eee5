// The optimizer a ps rebuilds: applied to the shards of a variable, it gives the variable's
// local update to the last bit, for every kind a ps supports, from fresh or carried-over state.

#include "distribute/parameter_server/shard_optimizer.h"

#include <torch/optim.h>
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <functional>

#include "common/error.h"
#include "distribute/optimizer/ftrl.h"

using namespace est::distribute;
namespace ps = est::ps;

namespace {

using MakeOptimizer = std::function<std::unique_ptr<torch::optim::Optimizer>(const at::Tensor&)>;

std::vector<std::pair<std::string, MakeOptimizer>> Kinds() {
  return {
      {"SGD", [](const at::Tensor& w) { return std::make_unique<torch::optim::SGD>(std::vector<at::Tensor>{w}, torch::optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(1e-3)); }},
      {"SGD with dampening", [](const at::Tensor& w) { return std::make_unique<torch::optim::SGD>(std::vector<at::Tensor>{w}, torch::optim::SGDOptions(0.05).momentum(0.5).dampening(0.1)); }},
      {"Adam", [](const at::Tensor& w) { return std::make_unique<torch::optim::Adam>(std::vector<at::Tensor>{w}, torch::optim::AdamOptions(1e-2).weight_decay(1e-4)); }},
      {"Adam amsgrad", [](const at::Tensor& w) { return std::make_unique<torch::optim::Adam>(std::vector<at::Tensor>{w}, torch::optim::AdamOptions(1e-2).amsgrad(true)); }},
      {"AdamW", [](const at::Tensor& w) { return std::make_unique<torch::optim::AdamW>(std::vector<at::Tensor>{w}, torch::optim::AdamWOptions(1e-2).betas({0.8, 0.99})); }},
      {"Adagrad", [](const at::Tensor& w) { return std::make_unique<torch::optim::Adagrad>(std::vector<at::Tensor>{w}, torch::optim::AdagradOptions(0.1).lr_decay(1e-3).initial_accumulator_value(0.1)); }},
      {"RMSprop", [](const at::Tensor& w) { return std::make_unique<torch::optim::RMSprop>(std::vector<at::Tensor>{w}, torch::optim::RMSpropOptions(1e-2).momentum(0.9).centered(true)); }},
      {"Ftrl", [](const at::Tensor& w) { return std::make_unique<est::optim::Ftrl>(std::vector<at::Tensor>{w}, est::optim::FtrlOptions(0.1).l1(0.01).l2(0.02).l2_shrinkage(0.01).beta(0.1)); }},
      {"Ftrl power -0.3", [](const at::Tensor& w) { return std::make_unique<est::optim::Ftrl>(std::vector<at::Tensor>{w}, est::optim::FtrlOptions(0.05).learning_rate_power(-0.3).initial_accumulator_value(0.2)); }},
  };
}

// One step of `optimizer` over `variable` with gradient `grad`.
void Step(torch::optim::Optimizer& optimizer, at::Tensor& variable, const at::Tensor& grad) {
  variable.mutable_grad() = grad.clone();
  optimizer.step();
}

}  // namespace

TEST_CASE("a variable's shards updated by rebuilt optimizers equal the variable updated locally", "[distribute][ps]") {
  for (const auto& [kind, make] : Kinds()) {
    SECTION(kind) {
      torch::manual_seed(7);
      at::Tensor whole = torch::randn({64, 48});
      auto local = make(whole);
      // Two shards of 40 and 24 rows (multiples of the vector width, so that every element
      // goes through the same kernel path as in the whole tensor).
      std::vector<at::Tensor> parts = {whole.slice(0, 0, 40).clone(), whole.slice(0, 40, 64).clone()};
      std::vector<std::unique_ptr<torch::optim::Optimizer>> shard_optimizers;
      for (auto& part : parts) shard_optimizers.push_back(MakeShardOptimizer(DescribeOptimizer(*local, whole, "w"), part));
      for (int step = 0; step < 30; ++step) {
        const at::Tensor grad = torch::randn({64, 48});
        Step(*local, whole, grad);
        Step(*shard_optimizers[0], parts[0], grad.slice(0, 0, 40));
        Step(*shard_optimizers[1], parts[1], grad.slice(0, 40, 64));
        if (step == 14) {
          // Carry the state over: the local optimizer's slots, cut, into fresh shard optimizers.
          const OptimizerSlots slots = GetOptimizerSlots(*local, whole);
          REQUIRE_FALSE(slots.empty());
          for (int p = 0; p < 2; ++p) {
            OptimizerSlots cut;
            for (const auto& [name, tensor] : slots)
              cut.emplace_back(name, SlotIsSharded(tensor) ? tensor.slice(0, p == 0 ? 0 : 40, p == 0 ? 40 : 64).clone()
                                                           : tensor.clone());
            shard_optimizers[p] = MakeShardOptimizer(DescribeOptimizer(*local, whole, "w"), parts[p]);
            SetOptimizerSlots(*shard_optimizers[p], parts[p], cut);
          }
        }
      }
      CHECK(torch::equal(torch::cat(parts), whole));
      // And the state comes back whole.
      for (const auto& [name, tensor] : GetOptimizerSlots(*local, whole)) {
        INFO(kind << " slot " << name);
        const OptimizerSlots first = GetOptimizerSlots(*shard_optimizers[0], parts[0]);
        const OptimizerSlots second = GetOptimizerSlots(*shard_optimizers[1], parts[1]);
        auto find = [&name = name](const OptimizerSlots& slots) {
          for (const auto& [n, t] : slots)
            if (n == name) return t;
          return at::Tensor();
        };
        if (SlotIsSharded(tensor)) {
          CHECK(torch::equal(torch::cat({find(first), find(second)}), tensor));
        } else {
          CHECK(torch::equal(find(first), tensor));
        }
      }
    }
  }
}

TEST_CASE("a learning-rate change reaches a shard optimizer", "[distribute][ps]") {
  at::Tensor w = torch::ones({4});
  torch::optim::SGD local({w}, torch::optim::SGDOptions(0.1));
  auto shard = MakeShardOptimizer(DescribeOptimizer(local, w, "w"), w);
  static_cast<torch::optim::SGDOptions&>(local.param_groups()[0].options()).lr(0.5);
  SetShardOptimizerOptions(*shard, DescribeOptimizer(local, w, "w"));
  Step(*shard, w, torch::ones({4}));
  CHECK(torch::allclose(w, torch::full({4}, 0.5)));
  ps::OptimizerConfig adam;
  adam.set_kind("Adam");
  CHECK_THROWS_WITH(SetShardOptimizerOptions(*shard, adam), Catch::Contains("SGD") && Catch::Contains("Adam"));
}

TEST_CASE("an optimizer a ps cannot apply is a ConfigError naming it and the variable", "[distribute][ps]") {
  at::Tensor w = torch::ones({4});
  torch::optim::LBFGS lbfgs({w}, torch::optim::LBFGSOptions(1));
  CHECK_THROWS_AS(DescribeOptimizer(lbfgs, w, "net/w"), est::ConfigError);
  CHECK_THROWS_WITH(DescribeOptimizer(lbfgs, w, "net/w"), Catch::Contains("'net/w'") && Catch::Contains("LBFGS") &&
                                                              Catch::Contains("SGD, Adam, AdamW, Adagrad, RMSprop and Ftrl"));
  torch::optim::SGD sgd({w}, torch::optim::SGDOptions(1));
  CHECK_THROWS_WITH(DescribeOptimizer(sgd, torch::ones({4}), "other"), Catch::Contains("'other' is in no parameter group"));
  ps::OptimizerConfig unknown;
  unknown.set_kind("Adadelta");
  CHECK_THROWS_WITH(MakeShardOptimizer(unknown, w), Catch::Contains("'Adadelta'"));
}

TEST_CASE("a ps shard's Ftrl with sparse_rows leaves the rows without gradient as the worker's does", "[distribute][ps][ftrl]") {
  torch::manual_seed(11);
  at::Tensor whole = torch::randn({64, 48});
  est::optim::Ftrl local({whole}, est::optim::FtrlOptions(0.2).l1(0.01).l2_shrinkage(0.02).sparse_rows(true));
  const ps::OptimizerConfig config = DescribeOptimizer(local, whole, "embedding");
  CHECK(config.kind() == "Ftrl");
  CHECK(config.sparse_rows());
  CHECK(config.l2_shrinkage() == 0.02);
  std::vector<at::Tensor> parts = {whole.slice(0, 0, 40).clone(), whole.slice(0, 40, 64).clone()};
  auto first = MakeShardOptimizer(config, parts[0]);
  auto second = MakeShardOptimizer(config, parts[1]);
  const at::Tensor untouched = whole.slice(0, 50, 51).clone();
  for (int step = 0; step < 20; ++step) {
    // About a tenth of the rows looked up; row 50 never; the second shard's rows none at step 3.
    at::Tensor rows = torch::rand({64, 1}) < 0.1;
    rows[50] = false;
    if (step == 3) rows.slice(0, 40, 64).zero_();
    const at::Tensor grad = torch::randn({64, 48}) * rows;
    Step(local, whole, grad);
    Step(*first, parts[0], grad.slice(0, 0, 40));
    Step(*second, parts[1], grad.slice(0, 40, 64));
  }
  CHECK(torch::equal(torch::cat(parts), whole));
  CHECK(torch::equal(whole.slice(0, 50, 51), untouched));
  const OptimizerSlots slots = GetOptimizerSlots(local, whole);
  REQUIRE(slots.size() == 2);
  const OptimizerSlots first_slots = GetOptimizerSlots(*first, parts[0]);
  REQUIRE(first_slots.size() == 2);
  for (size_t i = 0; i < slots.size(); ++i) {
    INFO(slots[i].first);
    CHECK(first_slots[i].first == slots[i].first);
    CHECK(SlotIsSharded(slots[i].second));
    CHECK(torch::equal(slots[i].second.slice(0, 0, 40), first_slots[i].second));
  }
  // Options pushed again (a schedule's learning rate) reach the shard.
  static_cast<est::optim::FtrlOptions&>(local.param_groups()[0].options()).lr(0.05);
  SetShardOptimizerOptions(*first, DescribeOptimizer(local, whole, "embedding"));
  CHECK(static_cast<est::optim::FtrlOptions&>(first->param_groups()[0].options()).lr() == 0.05);
  CHECK(static_cast<est::optim::FtrlOptions&>(first->param_groups()[0].options()).sparse_rows());
}
