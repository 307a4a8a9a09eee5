#include "estimator/model_context.h"

#include <catch2/catch.hpp>
#include <torch/torch.h>

using namespace est;


TEST_CASE("module() creates once and returns the same module afterwards", "[estimator]") {
  ModelContext ctx(nullptr, c10::Device(c10::kCPU), {});
  int created = 0;
  auto make = [&] {
    ++created;
    return torch::nn::Linear(3, 2);
  };
  auto first = ctx.module("dense", make);
  auto second = ctx.module("dense", make);
  CHECK(created == 1);
  CHECK(first.ptr() == second.ptr());
  CHECK_THROWS_AS(ctx.module("dense", [] { return torch::nn::Linear(3, 2).ptr(); }), ModelError);
}

TEST_CASE("module variables are named <module>/<parameter> in creation order", "[estimator]") {
  ModelContext ctx(nullptr, c10::Device(c10::kCPU), {});
  ctx.module("b", [] { return torch::nn::BatchNorm1d(2); });
  ctx.module("a", [] { return torch::nn::Linear(2, 1); });
  ctx.buffer("counter", [] { return torch::zeros({1}); });
  std::vector<std::string> names;
  for (const auto& [name, tensor] : ctx.variables()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"b/weight", "b/bias", "b/running_mean", "b/running_var",
                                          "b/num_batches_tracked", "a/weight", "a/bias", "counter"});
  CHECK(ctx.trainable_variables().size() == 4);
}

TEST_CASE("modules follow the mode: train() in training, eval() otherwise", "[estimator]") {
  ModelContext ctx(nullptr, c10::Device(c10::kCPU), {});
  ctx.set_mode(Mode::kTrain);
  auto dropout = ctx.module("drop", [] { return torch::nn::Dropout(0.5); });
  CHECK(dropout->is_training());
  ctx.set_mode(Mode::kEval);
  CHECK_FALSE(ctx.module("drop", [] { return torch::nn::Dropout(0.5); })->is_training());
  ctx.set_mode(Mode::kTrain);
  CHECK(ctx.module("drop", [] { return torch::nn::Dropout(0.5); })->is_training());
}

TEST_CASE("new variables and optimizers go through the initializers", "[estimator]") {
  std::vector<std::string> initialized;
  std::vector<std::string> optimizers;
  ModelContext::Initializers initializers;
  initializers.variables = [&](const NamedTensors& variables) {
    for (auto [name, tensor] : variables) {
      initialized.push_back(name);
      torch::NoGradGuard no_grad;
      tensor.fill_(7);
    }
  };
  initializers.optimizer = [&](const std::string& name, torch::optim::Optimizer&) { optimizers.push_back(name); };
  ModelContext ctx(nullptr, c10::Device(c10::kCPU), initializers);
  auto linear = ctx.module("lin", [] { return torch::nn::Linear(2, 1); });
  CHECK(initialized == std::vector<std::string>{"lin/weight", "lin/bias"});
  CHECK(linear->weight.eq(7).all().item<bool>());
  auto& sgd = ctx.optimizer("sgd", [&] { return torch::optim::SGD(linear->parameters(), 0.1); });
  auto& again = ctx.optimizer("sgd", [&] { return torch::optim::SGD(linear->parameters(), 0.5); });
  CHECK(&sgd == &again);
  CHECK(optimizers == std::vector<std::string>{"sgd"});
  CHECK(ctx.owns(&sgd));
  torch::optim::SGD stranger(linear->parameters(), 0.1);
  CHECK_FALSE(ctx.owns(&stranger));
  auto& buffer = ctx.buffer("buf", [] { return torch::zeros({3}); });
  CHECK(buffer.eq(7).all().item<bool>());
}

TEST_CASE("state names must be unique and well-formed", "[estimator]") {
  ModelContext ctx(nullptr, c10::Device(c10::kCPU), {});
  ctx.module("net", [] { return torch::nn::Linear(1, 1); });
  CHECK_THROWS_WITH(ctx.buffer("net", [] { return torch::zeros({1}); }), Catch::Contains("'net'"));
  CHECK_THROWS_AS(ctx.module("a/b", [] { return torch::nn::Linear(1, 1); }), ModelError);
  CHECK_THROWS_AS(ctx.buffer("global_step", [] { return torch::zeros({1}); }), ModelError);
  CHECK_THROWS_AS(ctx.module("", [] { return torch::nn::Linear(1, 1); }), ModelError);
}

TEST_CASE("params() is the Estimator's params", "[estimator]") {
  auto params = std::make_shared<const nlohmann::json>(nlohmann::json{{"learning_rate", 0.5}});
  ModelContext ctx(params, c10::Device(c10::kCPU), {});
  CHECK(ctx.params().at("learning_rate").get<double>() == 0.5);
  ModelContext empty(nullptr, c10::Device(c10::kCPU), {});
  CHECK(empty.params().is_object());
  CHECK(empty.params().empty());
}

TEST_CASE("a buffer's reference stays valid while more buffers are created", "[estimator]") {
  ModelContext ctx(std::make_shared<nlohmann::json>(), torch::kCPU, {});
  at::Tensor& first = ctx.buffer("first", [] { return torch::zeros({2}); });
  for (int i = 0; i < 100; ++i) ctx.buffer("more_" + std::to_string(i), [] { return torch::zeros({1}); });
  first.fill_(7);
  CHECK(at::equal(ctx.buffers().front(), torch::full({2}, 7.0f)));
  CHECK(&first == &ctx.buffer("first", [] { return torch::ones({2}); }));
}

TEST_CASE("an optimizer of a tensor that no module of the context owns is a ModelError naming it and the fix",
          "[estimator]") {
  ModelContext ctx(nullptr, c10::Device(c10::kCPU), {});
  auto owned = ctx.module("dense", [] { return torch::nn::Linear(2, 1); });
  auto& counter = ctx.buffer("counter", [] { return torch::zeros({1}); });
  CHECK_NOTHROW(ctx.optimizer("sgd", [&] {
    auto parameters = owned->parameters();
    parameters.push_back(counter);
    return torch::optim::SGD(parameters, 0.1);
  }));
  // A module made outside ModelContext (a static one, say): its parameters are in no
  // checkpoint and every replica would step the same tensor.
  torch::nn::Linear outside(3, 4);
  CHECK_THROWS_WITH(ctx.optimizer("adam", [&] { return torch::optim::Adam(outside->parameters(), 0.1); }),
                    Catch::Contains("optimizer 'adam'") && Catch::Contains("shape [4, 3]") &&
                        Catch::Contains("no module or buffer of the ModelContext owns") &&
                        Catch::Contains("ctx.module("));
  CHECK(ctx.optimizers().size() == 1);
}
